#!/usr/bin/env bash
# Brings up a single-node Kubernetes cluster on this machine for CI and development (issue #17): etcd,
# a private containerd (never Docker's), kube-apiserver, controller-manager, scheduler, kubelet and
# kube-proxy (iptables mode), with the CNI bridge plugin, all under $SANDGYM_K8S_DIR (default
# /var/lib/sandgym-k8s). Idempotent: a cluster that is already up is left running (images are re-imported
# when Docker's copy changed). Needs root, the binaries of scripts/k8s/build.sh and the Debian packages
# etcd-server containerd runc containernetworking-plugins iptables openssl.
# Waits for the node to be Ready, imports the sandgym sandbox images and a locally built pause image (no
# registry: pods use imagePullPolicy: Never), and prints the admin kubeconfig path on its last line.
# scripts/k8s/down.sh undoes all of it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
t0=$(date +%s.%N)

[ "$(id -u)" = 0 ] || { echo "up.sh: must run as root (containerd, kubelet, iptables)" >&2; exit 1; }
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy; do
  [ -x "$K8S_BIN/$b" ] || { echo "up.sh: $K8S_BIN/$b missing; run scripts/k8s/build.sh" >&2; exit 1; }
done
for c in etcd containerd runc ctr openssl iptables ip; do
  command -v "$c" >/dev/null || { echo "up.sh: $c missing (apt-get install etcd-server containerd runc containernetworking-plugins iptables openssl)" >&2; exit 1; }
done
CNI_BIN=/usr/lib/cni
[ -x "$CNI_BIN/bridge" ] || { echo "up.sh: $CNI_BIN/bridge missing (apt-get install containernetworking-plugins)" >&2; exit 1; }

mkdir -p "$K8S_DIR"/{pki,run,logs,etcd,containerd,cni/net.d,kubelet,kube-proxy}
chmod 700 "$K8S_DIR"
PKI="$K8S_DIR/pki"
exec 9>"$K8S_DIR/run/lock"
flock 9 # one up/down at a time

# --- certificates (kept between runs; the CA signs everything) -----------------------------------------
cert() { # name CN O [SANs]: a client/server certificate signed by the cluster CA
  local name=$1 cn=$2 o=$3 san=${4:-}
  [ -s "$PKI/$name.crt" ] && return 0
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  local subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o/CN=$cn"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}
if [ ! -s "$PKI/ca.crt" ]; then
  k8s_log "certificates"
  openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=sandgym-k8s-ca" -days 3650 -sha256 -out "$PKI/ca.crt" 2>/dev/null
fi
cert apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$POD_GW,IP:$SERVICE_IP"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
cert admin admin system:masters
cert controller-manager system:kube-controller-manager ""
cert scheduler system:kube-scheduler ""
cert kubelet "system:node:$NODE_NAME" system:nodes "DNS:$NODE_NAME,IP:127.0.0.1"
cert kube-proxy system:kube-proxy ""
if [ ! -s "$PKI/sa.key" ]; then
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
fi
chmod 600 "$PKI"/*.key

kubeconfig() { # file user cert
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: sandgym
  cluster: {certificate-authority: $PKI/ca.crt, server: "https://127.0.0.1:$APISERVER_PORT"}
users:
- name: $2
  user: {client-certificate: $PKI/$3.crt, client-key: $PKI/$3.key}
contexts:
- name: sandgym
  context: {cluster: sandgym, user: $2}
current-context: sandgym
KC
  chmod 600 "$1"
}
kubeconfig "$KUBECONFIG_PATH" admin admin
kubeconfig "$K8S_DIR/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
kubeconfig "$K8S_DIR/scheduler.kubeconfig" system:kube-scheduler scheduler
kubeconfig "$K8S_DIR/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet
kubeconfig "$K8S_DIR/kube-proxy.kubeconfig" system:kube-proxy kube-proxy

# --- host state: sysctls (saved once, restored by down.sh), bridge, iptables -----------------------------
if [ ! -s "$K8S_DIR/run/sysctls.saved" ]; then
  for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$K8S_DIR/run/sysctls.saved.tmp"
  mv "$K8S_DIR/run/sysctls.saved.tmp" "$K8S_DIR/run/sysctls.saved"
fi
# The bridge exists before the apiserver starts: the apiserver advertises its gateway address.
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then ip link add "$BRIDGE" type bridge; fi
ip addr show dev "$BRIDGE" | grep "inet $POD_GW/" >/dev/null || ip addr add "$POD_GW/${POD_CIDR#*/}" dev "$BRIDGE"
ip link set "$BRIDGE" up
tac <(k8s_ipt_rules) | while read -r ipt table chain spec; do
  # shellcheck disable=SC2086
  "$ipt" -t "$table" -C "$chain" $spec -m comment --comment "$IPT_TAG" 2>/dev/null ||
    "$ipt" -t "$table" -I "$chain" 1 $spec -m comment --comment "$IPT_TAG"
done

start() { # component args...: start detached with a pid file and a log, unless already running
  local name=$1; shift
  if k8s_alive "$name"; then return 0; fi
  setsid "$@" >>"$K8S_DIR/logs/$name.log" 2>&1 </dev/null 9>&- & # 9: the lock, not for daemons
  echo $! >"$K8S_DIR/run/$name.pid"
}
wait_for() { # what seconds command...: poll until the command succeeds
  local what=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "up.sh: $what not ready after ${secs}s; last log lines:" >&2
      tail -n 30 "$K8S_DIR/logs/$what.log" >&2 2>/dev/null || true
      exit 1
    fi
    # Only a pid that is gone means it exited: right after start() the child may not have exec'd yet
    # (its cmdline is still this script's), which k8s_alive would read as "not that component".
    kill -0 "$(cat "$K8S_DIR/run/$what.pid" 2>/dev/null)" 2>/dev/null || { echo "up.sh: $what exited; last log lines:" >&2; tail -n 30 "$K8S_DIR/logs/$what.log" >&2; exit 1; }
    sleep 0.2
  done
}

# --- etcd --------------------------------------------------------------------------------------------------
k8s_log "etcd"
start etcd etcd --name sandgym --data-dir "$K8S_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "sandgym=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" --log-level warn
etcd_healthy() { curl -fsS "http://127.0.0.1:$ETCD_PORT/health" | grep '"health":"true"' >/dev/null; }

# --- containerd (its own config, root, state, socket and runc root) --------------------------------------
k8s_log "containerd"
CD="$K8S_DIR/containerd"
cat >"$CD/config.toml" <<TOML
version = 2
root = "$CD/root"
state = "$CD/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/$PAUSE_IMAGE"
  # This machine's root lacks CAP_SYS_RESOURCE: without it runc cannot write oom_score_adj and fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CD/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$K8S_DIR/cni/net.d"
TOML
cat >"$K8S_DIR/cni/net.d/10-sandgym.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "$CNI_NET",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$POD_GW"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
start containerd containerd --config "$CD/config.toml"

wait_for etcd 60 etcd_healthy
wait_for containerd 60 ctr --address "$CTR_SOCK" version

# --- control plane -------------------------------------------------------------------------------------------
k8s_log "kube-apiserver"
start kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --advertise-address "$POD_GW" \
  --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types Hostname,InternalIP \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC \
  --enable-admission-plugins NodeRestriction --allow-privileged=true --profiling=false
api_ready() { curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://127.0.0.1:$APISERVER_PORT/readyz" | grep ok >/dev/null; }
wait_for kube-apiserver 120 api_ready

k8s_log "kube-controller-manager, kube-scheduler"
start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
  --kubeconfig "$K8S_DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$K8S_DIR/controller-manager.kubeconfig" --authorization-kubeconfig "$K8S_DIR/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs=false --profiling=false
start kube-scheduler "$K8S_BIN/kube-scheduler" \
  --kubeconfig "$K8S_DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig "$K8S_DIR/scheduler.kubeconfig" --authorization-kubeconfig "$K8S_DIR/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false

# --- node: kubelet and kube-proxy ----------------------------------------------------------------------------
k8s_log "kubelet"
# Host paths the kubelet and the CNI plugins hard-code: down.sh removes those that up.sh created.
for d in /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni; do
  [ -e "$d" ] || { mkdir -p "$d" && echo "$d" >>"$K8S_DIR/run/created-dirs"; }
done
mkdir -p /var/lib/kubelet/device-plugins
cat >"$K8S_DIR/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# This machine is cgroup v1, which kubelet 1.37 refuses unless told otherwise.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTR_SOCK
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
makeIPTablesUtilChains: false
podCIDR: $POD_CIDR
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# Images are imported, never pulled: image GC off so they are never removed, eviction only when nearly full.
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
YAML
start kubelet "$K8S_BIN/kubelet" --config "$K8S_DIR/kubelet/config.yaml" \
  --kubeconfig "$K8S_DIR/kubelet.kubeconfig" --hostname-override "$NODE_NAME" \
  --root-dir "$K8S_DIR/kubelet/root" --cert-dir "$PKI"

k8s_log "kube-proxy"
cat >"$K8S_DIR/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $K8S_DIR/kube-proxy.kubeconfig}
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Leave the host's conntrack sysctls alone (not ours to change, and not writable everywhere).
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
YAML
start kube-proxy "$K8S_BIN/kube-proxy" --config "$K8S_DIR/kube-proxy/config.yaml"

# --- images: the pause image and the sandbox images, from Docker's store into this containerd ------------------
k8s_log "images"
if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
  # Any image whose entrypoint sleeps forever serves as the pod sandbox ("pause") image.
  cid="$(docker create --label sandgym.k8s=pause sandgym/busybox:1 true)"
  docker commit --change 'ENTRYPOINT ["/bin/sleep", "2147483647"]' --change 'CMD []' --change 'USER 65534:65534' \
    "$cid" "$PAUSE_IMAGE" >/dev/null
  docker rm "$cid" >/dev/null
fi
images=("$PAUSE_IMAGE")
# Tagged images only: a rebuilt recipe leaves its old image untagged (<none>:<none>, still labelled), which no pod names.
# Repository task environments (sandgym/repo-env:<recipe hash>, `sandgym tasks build-envs`; built FROM sandgym/python:1
# so they carry its label too) are imported as well: the cluster stage validates repository tasks on pods
# (test/kubernetes/repo-validate.test.ts). An image is imported once per Docker id (import-image.sh's markers survive
# down.sh), so only a new or rebuilt environment costs an import (the Go one is 850 MB: ~20 s once per machine).
# sandgym/* only: another name of the same image (a test's `docker tag`, e.g. test/sandbox-e2e/many-images.test.ts's
# 50 tags of sandgym/python:1) carries the label too, and each name would be imported again.
for img in $(docker images --filter label=sandgym.recipe --filter dangling=false --format '{{.Repository}}:{{.Tag}}'); do
  case "$img" in sandgym/*) images+=("$img") ;; esac
done
bash "$here/import-image.sh" "${images[@]}"

# --- wait for the node ------------------------------------------------------------------------------------------
k8s_log "waiting for node $NODE_NAME Ready"
node_ready() { [ "$(k8s_kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for kubelet 120 node_ready
# The default service account exists once the controller-manager ran; pods need it.
default_sa() { k8s_kubectl -n default get serviceaccount default; }
wait_for kube-controller-manager 60 default_sa
for c in kube-scheduler kube-proxy; do k8s_alive "$c" || { echo "up.sh: $c exited:" >&2; tail -n 30 "$K8S_DIR/logs/$c.log" >&2; exit 1; }; done
k8s_log "cluster up in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")s; export KUBECONFIG=$KUBECONFIG_PATH"
echo "$KUBECONFIG_PATH"
