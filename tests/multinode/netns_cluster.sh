#!/bin/sh
# A cluster of simulated nodes on this machine: one network namespace per node (its own address on a
# private bridge that lives in a namespace of its own, so the machine's own network is never touched),
# each process entered with its own host name (UTS namespace) and its own /etc/hosts (a bind mount in
# a private mount namespace, which ends with the process). Used by the multi-node tests.
#
#   netns_cluster.sh up DIR NODES OWNER_PID LIFETIME_S   bring up nodes n1..nNODES; the namespaces are
#                                                         removed when OWNER_PID ends, after LIFETIME_S,
#                                                         or on `down`, whichever comes first
#   netns_cluster.sh enter DIR NODE CMD...               run CMD on NODE (n1, n2, ...)
#   netns_cluster.sh agent DIR NODE ARGS...              Open MPI's rsh agent: ARGS form one shell line
#   netns_cluster.sh kill-node DIR NODE                  SIGKILL every process on NODE
#   netns_cluster.sh link DIR NODE up|down               the node's link to the bridge
#   netns_cluster.sh shape DIR RATE                      limit every node link to RATE (tbf), both ways
#   netns_cluster.sh bytes DIR NODE                      bytes sent and received on the node's link
#   netns_cluster.sh down DIR                            kill everything and remove every namespace
#
# DIR (absolute) holds the cluster's files: `prefix` (the namespace names' prefix), one hosts file,
# and NODE.binds ("SOURCE TARGET" lines: extra bind mounts made for processes entered on NODE, e.g.
# a node-local disk). Addresses 10.251.X.K/24 exist only inside the namespaces; IPv6 is off there;
# no route is added anywhere.
set -eu

die() { echo "netns_cluster: $*" >&2; exit 1; }

prefix_of() { cat "$1/prefix"; }

# Everything of the cluster whose prefix is $1: processes, then namespaces (their links go with them).
teardown() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -9 "$pid" 2>/dev/null || true; done
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

cmd=${1:-}; [ -n "$cmd" ] || die "usage: netns_cluster.sh up|enter|agent|kill-node|link|shape|bytes|down DIR ..."
shift
dir=${1:-}; [ -n "$dir" ] || die "$cmd needs the cluster's directory"
shift

case "$cmd" in
up)
  nodes=$1 owner=$2 lifetime=$3
  # Namespaces left by a cluster whose owner is gone (a test killed with SIGKILL before its reaper ran).
  for stale in $(ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^\(tsn[0-9]*\)-.*/\1/p' | sort -u); do
    kill -0 "${stale#tsn}" 2>/dev/null || teardown "$stale"
  done
  prefix="tsn$owner"
  mkdir -p "$dir"
  echo "$prefix" > "$dir/prefix"
  : > "$dir/hosts"
  printf '127.0.0.1 localhost\n' >> "$dir/hosts"
  # The reaper: removes the cluster when the owner ends or the lifetime is over, even if the owner
  # was killed. Started before anything exists, so nothing can outlive it.
  setsid sh -c "end=\$((\$(date +%s) + $lifetime)); while kill -0 $owner 2>/dev/null && [ \$(date +%s) -lt \$end ] && [ -e '$dir/prefix' ]; do sleep 1; done; '$0' down '$dir' >/dev/null 2>&1" \
    </dev/null >/dev/null 2>&1 &
  sw="$prefix-sw"
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 addrgenmode none 2>/dev/null || true
  ip -n "$sw" link set br0 up
  k=1
  while [ "$k" -le "$nodes" ]; do
    ns="$prefix-n$k"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name "p$k" netns "$sw"
    ip -n "$sw" link set "p$k" addrgenmode none 2>/dev/null || true
    ip -n "$sw" link set "p$k" master br0
    ip -n "$sw" link set "p$k" up
    nsenter --net="/run/netns/$ns" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null || true
    ip -n "$ns" addr add "10.251.0.$k/24" dev eth0
    ip -n "$ns" link set eth0 up
    printf '10.251.0.%s n%s\n' "$k" "$k" >> "$dir/hosts"
    : > "$dir/n$k.binds"
    k=$((k + 1))
  done
  ;;
enter)
  node=$1; shift
  prefix=$(prefix_of "$dir")
  [ -e "/run/netns/$prefix-$node" ] || die "no node $node in the cluster at $dir"
  exec nsenter --net="/run/netns/$prefix-$node" -- unshare --uts --mount --propagation private -- \
    sh -c 'hostname "$1" && mount --bind "$2/hosts" /etc/hosts &&
           while read -r src dst; do [ -z "$src" ] || mount --bind "$src" "$dst" || exit 1; done < "$2/$1.binds" &&
           shift 2 && exec "$@"' \
    netns-node "$node" "$dir" "$@"
  ;;
agent)
  # Open MPI calls AGENT [options] HOST COMMAND-LINE...; the options (none are given) are skipped.
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
  node=$1; shift
  exec "$0" enter "$dir" "$node" sh -c "$*"
  ;;
kill-node)
  prefix=$(prefix_of "$dir")
  for pid in $(ip netns pids "$prefix-$1"); do kill -9 "$pid" 2>/dev/null || true; done
  ;;
link)
  prefix=$(prefix_of "$dir")
  k=${1#n}
  ip -n "$prefix-sw" link set "p$k" "$2"
  ;;
shape)
  prefix=$(prefix_of "$dir")
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix-n"); do
    k=${ns##*-n}
    tc -n "$ns" qdisc replace dev eth0 root tbf rate "$1" burst 256kb latency 50ms
    tc -n "$prefix-sw" qdisc replace dev "p$k" root tbf rate "$1" burst 256kb latency 50ms
  done
  ;;
bytes)
  prefix=$(prefix_of "$dir")
  printf '%s %s\n' "$(ip netns exec "$prefix-$1" cat /sys/class/net/eth0/statistics/tx_bytes)" \
    "$(ip netns exec "$prefix-$1" cat /sys/class/net/eth0/statistics/rx_bytes)"
  ;;
down)
  [ -e "$dir/prefix" ] || exit 0
  prefix=$(prefix_of "$dir")
  teardown "$prefix"
  rm -f "$dir/prefix"
  ;;
*) die "unknown command $cmd" ;;
esac
