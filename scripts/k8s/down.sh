#!/usr/bin/env bash
# Stops the cluster scripts/k8s/up.sh started, and only it (pid files under $SANDGYM_K8S_DIR): removes its
# pods and containers, unmounts what they mounted, deletes its bridge and the iptables rules it and
# kube-proxy added, restores the sysctls the kubelet and kube-proxy rewrote, and drops the cluster's state
# (etcd data, kubelet and containerd state), so the next up.sh starts an empty cluster. Certificates and
# imported images are kept for a fast next start; `down.sh --purge` removes them too.
# Idempotent: on a machine without a cluster it does nothing and succeeds. Never touches Docker's containerd.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
purge=0; [ "${1:-}" = --purge ] && purge=1
[ -d "$K8S_DIR" ] || exit 0
[ "$(id -u)" = 0 ] || { echo "down.sh: must run as root" >&2; exit 1; }
t0=$(date +%s.%N)
exec 9>"$K8S_DIR/run/lock"
flock 9

stop() { # component: TERM, then KILL after 20 s; only the pid in its pid file, only if it is still ours
  local name=$1 pid i
  if k8s_alive "$name"; then
    pid="$(cat "$K8S_DIR/run/$name.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$K8S_DIR/run/$name.pid"
}
tasks_left() { k8s_ctr tasks ls -q 2>/dev/null | grep -c . || true; }

# 1. Pods: no controllers to recreate them, then delete them all and let the kubelet stop their containers
#    and tear down their network (CNI DEL).
stop kube-controller-manager
stop kube-scheduler
if k8s_alive kube-apiserver && k8s_alive kubelet; then
  k8s_log "deleting pods"
  k8s_kubectl delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  for _ in $(seq 1 150); do [ "$(tasks_left)" = 0 ] && break; sleep 0.2; done
fi
# 2. kube-proxy, then its iptables chains.
stop kube-proxy
[ -x "$K8S_BIN/kube-proxy" ] && "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
stop kubelet
# 3. Whatever the kubelet left (containers of pods it had not stopped yet), straight through containerd.
if k8s_alive containerd; then
  for t in $(k8s_ctr tasks ls -q 2>/dev/null); do k8s_ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  for _ in $(seq 1 25); do [ "$(tasks_left)" = 0 ] && break; sleep 0.2; done
  for t in $(k8s_ctr tasks ls -q 2>/dev/null); do k8s_ctr tasks rm -f "$t" >/dev/null 2>&1 || true; done
  for c in $(k8s_ctr containers ls -q 2>/dev/null); do k8s_ctr containers rm "$c" >/dev/null 2>&1 || true; done
fi
stop kube-apiserver
stop containerd
stop etcd
# Shims of this containerd (found by its socket address, which no other containerd uses) outlive it.
for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $CTR_SOCK" || true); do kill -KILL "$p" 2>/dev/null || true; done

# 4. Mounts (pod volumes, container rootfs, network namespaces: all under $K8S_DIR), deepest first.
findmnt -rn -o TARGET | { grep -F "$K8S_DIR/" || true; } | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
done
# 5. Network: the bridge (veths went with their namespaces), IP leases of the CNI host-local plugin,
#    the iptables rules up.sh added.
ip link del "$BRIDGE" 2>/dev/null || true
rm -rf "/var/lib/cni/networks/$CNI_NET" /var/lib/cni/results/"$CNI_NET"-*
k8s_ipt_rules | while read -r ipt table chain spec; do
  # shellcheck disable=SC2086
  while "$ipt" -t "$table" -D "$chain" $spec -m comment --comment "$IPT_TAG" 2>/dev/null; do :; done
done
# 6. Sysctls back to what they were before the first up.sh.
if [ -s "$K8S_DIR/run/sysctls.saved" ]; then
  while IFS= read -r kv; do sysctl -qw "$kv" >/dev/null 2>&1 || true; done <"$K8S_DIR/run/sysctls.saved"
  rm -f "$K8S_DIR/run/sysctls.saved"
fi
# 7. The kubelet's pod cgroups (empty now), pod log dirs, and the cluster's runtime state.
for ctl in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$ctl" ] && find "$ctl" -depth -type d -exec rmdir {} + 2>/dev/null || true
done
rm -rf /var/log/pods/* /var/lib/kubelet/device-plugins/kubelet.sock 2>/dev/null || true
find /var/log/containers -maxdepth 1 -xtype l -delete 2>/dev/null || true
if [ -s "$K8S_DIR/run/created-dirs" ]; then
  while IFS= read -r d; do rm -rf "$d"; done <"$K8S_DIR/run/created-dirs"
  rm -f "$K8S_DIR/run/created-dirs"
fi
rm -rf "$K8S_DIR/etcd" "$K8S_DIR/kubelet" "$K8S_DIR/containerd/state" "$K8S_DIR/containerd/runc" "$K8S_DIR/containerd/opt"
if [ "$purge" = 1 ]; then
  exec 9>&-
  rm -rf "$K8S_DIR"
fi
k8s_log "cluster down in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")s"
