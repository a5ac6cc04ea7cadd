//===- PlacementAxes.cpp - One communicator per placement axis ------------===//
//
// A collective with `axis k` runs over the ranks whose grid coordinates
// differ only in coordinate k. Splitting the job's communicator by the other
// coordinates (the color) and ranking by coordinate k (the key) gives exactly
// those groups, the same on every rank.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/Communicator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zero::rt {

absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
splitPlacementAxes(Communicator &job, absl::Span<const int64_t> grid) {
  int64_t ranks = 1;
  for (int64_t extent : grid) {
    if (extent < 1)
      return absl::InvalidArgumentError(absl::StrCat("placement grid ",
                                                     absl::StrJoin(grid, "x"),
                                                     ": extents must be >= 1"));
    ranks *= extent;
  }
  if (ranks != job.size())
    return absl::InvalidArgumentError(
        absl::StrCat("placement grid ", absl::StrJoin(grid, "x"), " has ",
                     ranks, " ranks but the job has ", job.size()));
  // Row-major coordinates of this rank.
  std::vector<int64_t> coordinates(grid.size());
  int64_t rest = job.rank();
  for (size_t axis = grid.size(); axis-- > 0;) {
    coordinates[axis] = rest % grid[axis];
    rest /= grid[axis];
  }
  std::vector<std::unique_ptr<Communicator>> axes;
  for (size_t axis = 0; axis < grid.size(); ++axis) {
    int64_t color = 0;
    for (size_t other = 0; other < grid.size(); ++other)
      if (other != axis)
        color = color * grid[other] + coordinates[other];
    absl::StatusOr<std::unique_ptr<Communicator>> group =
        job.split(static_cast<int>(color), static_cast<int>(coordinates[axis]));
    if (!group.ok())
      return absl::Status(group.status().code(),
                          absl::StrCat("the communicator of placement axis ",
                                       axis, ": ", group.status().message()));
    if ((*group)->size() != grid[axis])
      return absl::InternalError(
          absl::StrCat("the communicator of placement axis ", axis, " has ",
                       (*group)->size(), " ranks, not ", grid[axis]));
    axes.push_back(*std::move(group));
  }
  return axes;
}

} // namespace zero::rt
