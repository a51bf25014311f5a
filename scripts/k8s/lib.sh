# Shared settings of scripts/k8s/{up,down,import-image}.sh (sourced, not run). Everything the local
# cluster owns lives under $K8S_DIR, except the few host paths the kubelet and the CNI plugins hard-code
# (down.sh cleans those of what this cluster put there).
K8S_VERSION="${SANDGYM_K8S_VERSION:-v1.37.2}"
K8S_BIN="${SANDGYM_K8S_BIN_DIR:-$HOME/.cache/sandgym/bin/kubernetes-$K8S_VERSION}"
K8S_DIR="${SANDGYM_K8S_DIR:-/var/lib/sandgym-k8s}"
KUBECONFIG_PATH="$K8S_DIR/admin.kubeconfig"
# Pod network: one Linux bridge with a /24 the host routes to directly (server pods are reachable from the
# host); the apiserver is also served on the bridge's gateway address so in-cluster clients (the server's
# kubernetes driver in a pod) reach it through the `kubernetes` Service.
BRIDGE="${SANDGYM_K8S_BRIDGE:-sgk8s0}"
POD_CIDR="${SANDGYM_K8S_POD_CIDR:-10.244.0.0/24}"
POD_GW="${POD_CIDR%.*}.1"
SERVICE_CIDR="${SANDGYM_K8S_SERVICE_CIDR:-10.96.0.0/16}"
SERVICE_IP="${SERVICE_CIDR%.*/*}.1" # first address of the service range: the `kubernetes` Service
CNI_NET=sandgym-k8s
APISERVER_PORT="${SANDGYM_K8S_APISERVER_PORT:-6443}"
ETCD_PORT="${SANDGYM_K8S_ETCD_PORT:-2379}"
ETCD_PEER_PORT="${SANDGYM_K8S_ETCD_PEER_PORT:-2380}"
NODE_NAME=localhost
PAUSE_IMAGE=sandgym/pause:1
CTR_SOCK="$K8S_DIR/containerd/containerd.sock"
# Comment on every iptables rule up.sh adds, so down.sh removes exactly those.
IPT_TAG=sandgym-k8s
# Sysctls the kubelet and kube-proxy rewrite: saved by up.sh, restored by down.sh.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.conf.all.route_localnet)
# Start order; down.sh stops them in reverse.
COMPONENTS=(etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

k8s_log() { printf '[k8s %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
k8s_ctr() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }
k8s_kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
k8s_alive() { # component: its pid file names a live process that is still that component
  local pid
  pid="$(cat "$K8S_DIR/run/$1.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "$K8S_DIR" "/proc/$pid/cmdline" 2>/dev/null
}
# iptables rules this cluster adds (command, table, then the rule spec without -A/-I/-D).
k8s_ipt_rules() {
  echo "iptables filter FORWARD -i $BRIDGE -j ACCEPT"
  echo "iptables filter FORWARD -o $BRIDGE -j ACCEPT"
  # The apiserver listens on all addresses (for the bridge gateway, see above) but answers only on
  # loopback and the pod bridge.
  echo "iptables filter INPUT -p tcp --dport $APISERVER_PORT -i lo -j ACCEPT"
  echo "iptables filter INPUT -p tcp --dport $APISERVER_PORT -i $BRIDGE -j ACCEPT"
  echo "iptables filter INPUT -p tcp --dport $APISERVER_PORT -j DROP"
  echo "ip6tables filter INPUT -p tcp --dport $APISERVER_PORT -i lo -j ACCEPT"
  echo "ip6tables filter INPUT -p tcp --dport $APISERVER_PORT -j DROP"
}
