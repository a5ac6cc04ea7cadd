// The dist dialect's collectives on four CPU ranks: a gradient of 10
// elements is reduce-scattered into shards of 3 (padded to 12), the updated
// shard is all-gathered back to 10, and a bucket packs two tensors for one
// collective.
//
//   zero-opt examples/collectives.mlir

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @shard_and_gather(%grad: tensor<10xf32>, %a: tensor<2x3xf32>,
                              %b: tensor<5xf32>) -> (tensor<10xf32>, tensor<3xf32>) {
    %shard = dist.reduce_scatter mean %grad axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %token = dist.all_gather_start %shard axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<10xf32>>
    %full = dist.wait %token : !dist.token<tensor<10xf32>>
    %bucket = dist.pack %a, %b pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<12xf32>
    %bucket_shard = dist.reduce_scatter sum %bucket axis 0 dim 0 : tensor<12xf32> -> tensor<3xf32>
    return %full, %bucket_shard : tensor<10xf32>, tensor<3xf32>
  }
}
