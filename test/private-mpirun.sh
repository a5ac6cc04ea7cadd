#!/usr/bin/env bash
# mpirun with a session directory of its own (lit's %mpirun). Open MPI 4
# keeps every job's session files under one top directory per host and user
# in $TMPDIR and removes that directory when a job ending finds it empty; a
# job starting at that moment fails in orte_init ("orte_session_dir
# failed"). Tests run several jobs at once, so each gets its own base.
set -u
base=$(mktemp -d "${TMPDIR:-/tmp}/mpirun.XXXXXX")
export OMPI_MCA_orte_tmpdir_base="$base"
mpirun "$@"
status=$?
rm -rf "$base"
exit $status
