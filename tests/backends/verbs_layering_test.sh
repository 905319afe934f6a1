#!/bin/sh
# The verbs backend's layers (c10d/backends/verbs/README.md): the algorithms see the transports only
# through comm.h and transport/transport.h (StagingSlots for the shm fast paths), never a concrete
# transport; the transports know nothing of the algorithms. Fails naming each include that crosses.
# Usage: verbs_layering_test.sh SOURCE_DIR
set -u
cd "$1/c10d/backends/verbs" || exit 2
bad=0
crossing() {  # crossing DIR PATTERN WHY
  hits=$(grep -rn "#include \"c10d/backends/verbs/$2" "$1" 2>/dev/null)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | sed "s|^|c10d/backends/verbs/|; s|\$|  <- $3|"
    bad=1
  fi
}
crossing algorithms 'transport/\(shm\|tcp\|ibverbs\)/' "an algorithm reaching a concrete transport"
crossing algorithms 'transport/mixed_transport' "an algorithm reaching a concrete transport"
crossing algorithms 'process_group_verbs' "an algorithm reaching the ProcessGroup"
crossing transport 'algorithms/' "a transport reaching the algorithms"
crossing transport 'process_group_verbs' "a transport reaching the ProcessGroup"
# The sanity check itself: the algorithms do include comm.h (else the grep above sees nothing).
grep -rqn '#include "c10d/backends/verbs/\(comm\|algorithms/algorithms\)\.h"' algorithms || {
  echo "verbs_layering_test: no algorithm includes comm.h / algorithms.h: wrong directory?"
  bad=1
}
[ "$bad" = 0 ] && echo "verbs layering: algorithms -> comm.h -> transport/transport.h only"
exit "$bad"
