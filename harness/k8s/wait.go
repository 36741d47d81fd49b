package k8s

// waitScript is the check pod's init container: a POSIX shell script that
// waits until each of the SHARDS shard directories under RESULTS (shard-0
// to shard-(SHARDS-1)) holds its run.json, polling every POLL_SECONDS and
// saying which it waits for whenever that changes (first, so that even a
// wait whose whole-second deadline has already passed says it). It exits 0 when all
// do, and 1, naming the shards still missing, when TIMEOUT_SECONDS pass
// first. It runs in the rlbench image, whose base (debian) has sh, date
// and sleep. So the check Job can be applied with the shards' Job: its
// check starts when the last shard is done.
const waitScript = `set -eu
deadline=$(( $(date +%s) + $TIMEOUT_SECONDS ))
last=""
while :; do
  missing=""
  i=0
  while [ "$i" -lt "$SHARDS" ]; do
    [ -f "$RESULTS/shard-$i/run.json" ] || missing="$missing $i"
    i=$((i + 1))
  done
  if [ -z "$missing" ]; then
    echo "all $SHARDS shards have written $RESULTS/shard-*/run.json"
    exit 0
  fi
  if [ "$missing" != "$last" ]; then
    echo "waiting for shards${missing}"
    last="$missing"
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "shards${missing} wrote no run.json within ${TIMEOUT_SECONDS}s; see kubectl logs of their pods" >&2
    exit 1
  fi
  sleep "$POLL_SECONDS"
done
`
