#!/usr/bin/env bash
# up.sh STATE_DIR: starts a single-node Kubernetes cluster (docs/test-cluster.md)
# with all of its state under STATE_DIR, and returns once the node is Ready and
# the default service account exists. Writes STATE_DIR/kubeconfig and
# STATE_DIR/env. Stop it with down.sh STATE_DIR, also after a failed up.
#
# Must run as root. Ports (all on loopback but the kubelet's): registry 5000,
# etcd 2379/2380, kube-apiserver 6443, controller-manager 10257, scheduler
# 10259, kubelet 10250 (node IP) and 10248, kube-proxy 10249 and 10256. One
# cluster per machine.
#
#   XRUN_K8S_BIN               bin dir of build.sh (default: run build.sh, a no-op when cached)
#   XRUN_K8S_UP_TIMEOUT        seconds to wait for the whole cluster (default 300)
#   XRUN_K8S_NODE_IP           the node's IP (default: the IPv4 of the default route's device)
#   XRUN_K8S_KEEP_ON_FAILURE=1 leave the processes of a failed up running (default: down.sh runs)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
t0=$SECONDS
say() { printf '[up %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
die() { printf 'up.sh: ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: up.sh STATE_DIR"
[ "$(id -u)" = 0 ] || die "must run as root (containerd, kubelet, mounts, CNI)"
case "$1" in *[[:space:]]*) die "STATE_DIR must not contain whitespace: '$1'" ;; esac
mkdir -p "$1"
S="$(cd "$1" && pwd)"

REG_PORT=5000 ETCD_PORT=2379 ETCD_PEER_PORT=2380 API_PORT=6443
KCM_PORT=10257 SCHED_PORT=10259 KUBELET_PORT=10250 KUBELET_HEALTHZ_PORT=10248
PROXY_METRICS_PORT=10249 PROXY_HEALTHZ_PORT=10256
NODE=xrun-node
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24 SERVICE_IP=10.96.0.1
BRIDGE=xrunk8s0
TIMEOUT="${XRUN_K8S_UP_TIMEOUT:-300}"
# Unix sockets (containerd's and its shims') must fit in 108 bytes, so they
# live in a short directory named after STATE_DIR rather than under it.
RUN="/run/xrun-k8s/$(printf %s "$S" | sha256sum | cut -c1-8)"
PAUSE_IMAGE="localhost:$REG_PORT/xrun/pause:1"

# --- refuse a second start --------------------------------------------------
alive() { # pidfile -> 0 when its process runs and is ours (its args name a path in STATE_DIR)
  local pid; pid="$(cat "$1" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$S/"
}
for f in "$S"/pids/*.pid; do
  [ -e "$f" ] || continue
  if alive "$f"; then die "a cluster is already running in $S ($(basename "$f" .pid) pid $(cat "$f")); run down.sh $S first"; fi
done
for p in $REG_PORT $ETCD_PORT $ETCD_PEER_PORT $API_PORT $KCM_PORT $SCHED_PORT $KUBELET_PORT $KUBELET_HEALTHZ_PORT $PROXY_METRICS_PORT $PROXY_HEALTHZ_PORT; do
  if ss -Htln "sport = :$p" | grep -q .; then
    die "port $p is in use ($(ss -Htlnp "sport = :$p" | head -1 | awk '{print $NF}')); is another cluster up? (down.sh STATE_DIR)"
  fi
done

# --- binaries -----------------------------------------------------------------
if [ -n "${XRUN_K8S_BIN:-}" ]; then BIN="$XRUN_K8S_BIN"
else BIN="$("$here/build.sh" | tail -1)" || die "build.sh failed"; fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl containerd containerd-shim-runc-v2 registry pause; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing: run build.sh"
done
RUNC="${XRUN_K8S_RUNC:-$(command -v runc || true)}"; [ -x "$RUNC" ] || die "runc not found (apt-get install runc; build.sh does)"
CNI_BIN=/usr/lib/cni
[ -x "$CNI_BIN/bridge" ] || die "$CNI_BIN/bridge missing (apt-get install containernetworking-plugins; build.sh does)"
export PATH="$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

NODE_IP="${XRUN_K8S_NODE_IP:-}"
if [ -z "$NODE_IP" ]; then
  dev="$(ip -4 route show default | awk '!d{for(i=1;i<NF;i++) if($i=="dev"){d=$(i+1); print d}}')"
  [ -n "$dev" ] && NODE_IP="$(ip -4 -o addr show dev "$dev" scope global | awk 'NR==1{split($4,a,"/"); print a[1]}')"
fi
[ -n "$NODE_IP" ] || die "no node IP: no IPv4 on the default route's device; set XRUN_K8S_NODE_IP (the kubelet refuses loopback)"

mkdir -p "$S"/{pki,etcd,registry,logs,pids,host,kubelet,pod-logs,cni/net.d,cni/ipam,cdi} \
         "$S"/containerd/{root,state,certs.d} "$RUN"
chmod 700 "$S/etcd"
echo "$RUN" >"$S/rundir"
echo "$BIN" >"$S/bindir"   # down.sh's kube-proxy --cleanup

# --- on failure: name the component, show its log, clean up -------------------
started=()
fail() { # component message
  local c="$1"; shift
  printf 'up.sh: ERROR: %s: %s\n' "$c" "$*" >&2
  if [ -s "$S/logs/$c.log" ]; then
    printf -- '--- last 40 lines of %s ---\n' "$S/logs/$c.log" >&2
    tail -n 40 "$S/logs/$c.log" >&2
    printf -- '---\n' >&2
  fi
  exit 1
}
on_exit() {
  local rc=$?
  [ $rc = 0 ] && return
  if [ "${XRUN_K8S_KEEP_ON_FAILURE:-0}" = 1 ]; then
    echo "up.sh: failed; processes left running (XRUN_K8S_KEEP_ON_FAILURE=1); logs in $S/logs" >&2
  else
    echo "up.sh: failed; stopping what was started (down.sh); logs stay in $S/logs" >&2
    "$here/down.sh" "$S" >&2 || true
  fi
}
trap on_exit EXIT

start() { # name cmd... : detached, own session, log in logs/NAME.log, pid in pids/NAME.pid
  local name="$1"; shift
  # Not a process group leader here, so setsid execs in place and $! is the component.
  setsid "$@" </dev/null >>"$S/logs/$name.log" 2>&1 &
  echo $! >"$S/pids/$name.pid"
  started+=("$name")
}
check_alive() { # our children: alive while /proc has them and they are no zombie
  local c pid st
  for c in "${started[@]}"; do
    pid="$(cat "$S/pids/$c.pid")"
    st="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
    [ -n "$st" ] && [ "$st" != Z ] || fail "$c" "exited during start-up"
  done
}
deadline=$((SECONDS + TIMEOUT))
wait_for() { # component what cmd... : until cmd succeeds, the overall deadline, or a death
  local c="$1" what="$2"; shift 2
  until "$@" >/dev/null 2>&1; do
    check_alive
    [ $SECONDS -lt $deadline ] || fail "$c" "timed out (XRUN_K8S_UP_TIMEOUT=${TIMEOUT}s) waiting for $what"
    sleep 0.5
  done
  say "$c: $what"
}

# --- host settings the kubelet and the bridge plugin change; down.sh restores them
if [ ! -e "$S/host/sysctl" ]; then
  for k in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops \
           kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/ipv4/ip_forward; do
    [ -r "/proc/sys/$k" ] && echo "$k $(cat "/proc/sys/$k")"
  done >"$S/host/sysctl"
  for d in /sys/fs/cgroup/*/kubepods; do [ -d "$d" ] && echo "$d"; done >"$S/host/cgroups-before" || true
  # Paths the kubelet (device-plugins socket, /var/log/containers links), the
  # controller-manager (flex volume dir) and libcni (result cache) hard-code.
  for p in /var/lib/kubelet /var/lib/cni /usr/libexec/kubernetes /var/log/containers; do
    [ -e "$p" ] && echo "$p"
  done >"$S/host/paths-before" || true
  { command -v nft >/dev/null && nft list tables 2>/dev/null || true; } >"$S/host/nft-tables-before"
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for tbl in mangle nat filter; do
      $ipt -w -t $tbl -S 2>/dev/null | awk -v f=$ipt -v t=$tbl '$1=="-N"{print f, t, $2}'
    done
  done >"$S/host/iptables-chains-before"
fi

# --- certificates ---------------------------------------------------------------
pki="$S/pki"
cert() { # name CN O(or -) kind(server|client) [SANs]
  local name="$1" cn="$2" o="$3" kind="$4" sans="${5:-}" subj="/CN=$2"
  [ "$o" != - ] && subj="/O=$o/CN=$cn"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ "$kind" = server ]; then echo "extendedKeyUsage=serverAuth"; else echo "extendedKeyUsage=clientAuth"; fi
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } >"$pki/$name.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}
if [ ! -s "$pki/admin.crt" ]; then
  say "certificates (openssl, EC P-256) in $pki"
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 -subj "/CN=xrun-k8s-ca" 2>/dev/null
  cert apiserver kube-apiserver - server \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$SERVICE_IP,IP:$NODE_IP"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client
  cert admin xrun-admin system:masters client
  cert controller-manager system:kube-controller-manager - client
  cert scheduler system:kube-scheduler - client
  cert kubelet "system:node:$NODE" system:nodes client
  cert kubelet-serving "$NODE" - server "DNS:$NODE,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"
  # Service-account token signing key pair.
  openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
  openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  chmod 600 "$pki"/*.key
fi

kubeconfig() { # file user cert-name
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: xrun-k8s
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$pki/$3.crt")
    client-key-data: $(base64 -w0 "$pki/$3.key")
contexts:
- name: xrun-k8s
  context:
    cluster: xrun-k8s
    user: $2
    namespace: default
current-context: xrun-k8s
EOF
  chmod 600 "$1"
}
kubeconfig "$S/kubeconfig" xrun-admin admin
kubeconfig "$S/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
kubeconfig "$S/scheduler.kubeconfig" system:kube-scheduler scheduler
kubeconfig "$S/kubelet.kubeconfig" "system:node:$NODE" kubelet
# kube-proxy's user, which the default ClusterRoleBinding system:node-proxier names.
[ -s "$pki/kube-proxy.crt" ] || cert kube-proxy system:kube-proxy - client
kubeconfig "$S/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
kubectl() { "$BIN/kubectl" --kubeconfig "$S/kubeconfig" "$@"; }

# --- registry -------------------------------------------------------------------
cat >"$S/registry.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: $S/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REG_PORT
EOF
# The registry would export traces over OTLP by default; there is no collector.
OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \
  start registry "$BIN/registry" serve "$S/registry.yml"
reg="http://127.0.0.1:$REG_PORT"
wait_for registry "serving $reg/v2/" curl -fsS "$reg/v2/"

# The pods' sandbox ("pause") image: nothing can be pulled from outside, so it
# is packed here from bin/pause and pushed over the registry's HTTP API.
push_blob() { # repo file digest
  local loc sep
  loc="$(curl -fsS -X POST -D - -o /dev/null "$reg/v2/$1/blobs/uploads/" |
         awk 'tolower($1)=="location:"{print $2}' | tr -d '\r')"
  [ -n "$loc" ] || return 1
  case "$loc" in /*) loc="$reg$loc" ;; esac
  sep='?'; case "$loc" in *\?*) sep='&' ;; esac
  curl -fsS -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$2" "$loc${sep}digest=$3" >/dev/null
}
seed="$S/registry-seed"
rm -rf "$seed"; mkdir -p "$seed/rootfs"
cp "$BIN/pause" "$seed/rootfs/pause"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$seed/rootfs" -cf "$seed/layer.tar" pause
gzip -n -c "$seed/layer.tar" >"$seed/layer.tar.gz"
arch="$(uname -m)"; case "$arch" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
diff_id="sha256:$(sha256sum <"$seed/layer.tar" | cut -d' ' -f1)"
layer="sha256:$(sha256sum <"$seed/layer.tar.gz" | cut -d' ' -f1)"
printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
  "$arch" "$diff_id" >"$seed/config.json"
config="sha256:$(sha256sum <"$seed/config.json" | cut -d' ' -f1)"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%d}]}' \
  "$config" "$(stat -c %s "$seed/config.json")" "$layer" "$(stat -c %s "$seed/layer.tar.gz")" >"$seed/manifest.json"
push_blob xrun/pause "$seed/layer.tar.gz" "$layer" || fail registry "pushing the pause layer failed"
push_blob xrun/pause "$seed/config.json" "$config" || fail registry "pushing the pause config failed"
curl -fsS -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
  --data-binary "@$seed/manifest.json" "$reg/v2/xrun/pause/manifests/1" >/dev/null ||
  fail registry "pushing the pause manifest failed"
say "registry: pushed $PAUSE_IMAGE"

# --- etcd -------------------------------------------------------------------------
start etcd "$BIN/etcd" --name xrun --data-dir "$S/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "xrun=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
  --unsafe-no-fsync --snapshot-count 10000 --quota-backend-bytes 2147483648
wait_for etcd "healthy" sh -c "curl -fsS http://127.0.0.1:$ETCD_PORT/health | grep -q '\"health\":\"true\"'"

# --- kube-apiserver ---------------------------------------------------------------
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
  --cert-dir "$S/apiserver" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --client-ca-file "$pki/ca.crt" \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
  --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --authorization-mode Node,RBAC --allow-privileged=true \
  --profiling=false --v=1
wait_for kube-apiserver "ready on https://127.0.0.1:$API_PORT" \
  curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$API_PORT/readyz"

# --- controller-manager and scheduler ---------------------------------------------
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$S/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$S/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$S/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --cert-dir "$S/controller-manager" \
  --leader-elect=false --use-service-account-credentials=true \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs=false \
  --controllers '*' --flex-volume-plugin-dir "$S/controller-manager/volume-plugins" \
  --profiling=false --v=1
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig "$S/scheduler.kubeconfig" \
  --authentication-kubeconfig "$S/scheduler.kubeconfig" \
  --authorization-kubeconfig "$S/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --cert-dir "$S/scheduler" \
  --leader-elect=false --profiling=false --v=1

# --- containerd (its own: root, state, sockets), CRI, CNI ----------------------------
# The bridge has no default route for the pods: they reach each other, the
# host's bridge address and the Services' cluster IPs (through the host, where
# kube-proxy's rules are), and nothing beyond the machine.
cat >"$S/cni/net.d/10-xrun.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "xrun-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "$SERVICE_CIDR", "gw": "${POD_CIDR%.*}.1"}],
        "dataDir": "$S/cni/ipam"
      }
    }
  ]
}
EOF
mkdir -p "$S/containerd/certs.d/localhost:$REG_PORT"
cat >"$S/containerd/certs.d/localhost:$REG_PORT/hosts.toml" <<EOF
# localhost:$REG_PORT is the cluster's registry, plain HTTP on loopback.
server = "http://127.0.0.1:$REG_PORT"

[host."http://127.0.0.1:$REG_PORT"]
  capabilities = ["pull", "resolve", "push"]
EOF
cat >"$S/containerd/config.toml" <<EOF
version = 3
root = "$S/containerd/root"
state = "$S/containerd/state"
# opt would create /opt/containerd; nri would listen on /var/run/nri.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri"]

[grpc]
  address = "$RUN/containerd.sock"

[ttrpc]
  address = "$RUN/containerd.sock.ttrpc"

[plugins]
  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = "$RUN/s"

  [plugins.'io.containerd.transfer.v1.local']
    config_path = "$S/containerd/certs.d"

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "$S/containerd/certs.d"

  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    # Lowering oom_score_adj needs CAP_SYS_RESOURCE, which a sandboxed machine
    # may lack (runc then fails with "can't get final child's PID from pipe");
    # clamp pods' scores at containerd's own instead.
    restrict_oom_score_adj = true
    cdi_spec_dirs = ["$S/cdi"]
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$RUNC"
          Root = "$RUN/runc"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$CNI_BIN"]
      conf_dir = "$S/cni/net.d"
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
start containerd "$BIN/containerd" --config "$S/containerd/config.toml"
wait_for containerd "socket $RUN/containerd.sock" test -S "$RUN/containerd.sock"

# --- kubelet ------------------------------------------------------------------------
cat >"$S/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine runs cgroup v1; kubelet 1.35+ refuses it unless told otherwise.
failCgroupV1: false
failSwapOn: false
# Kept at the machine's 0: a lower score needs CAP_SYS_RESOURCE.
oomScoreAdj: 0
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$RUN/containerd.sock
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: $S/pod-logs
volumePluginDir: $S/kubelet/volume-plugins
rotateCertificates: false
serverTLSBootstrap: false
serializeImagePulls: false
# A test machine's disk may be fuller than the default 10-15% thresholds allow.
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
  imagefs.inodesFree: "1%"
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
start kubelet "$BIN/kubelet" --config "$S/kubelet.yaml" --kubeconfig "$S/kubelet.kubeconfig" \
  --root-dir "$S/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP" --v=2

wait_for kube-scheduler "healthy" curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
wait_for kube-controller-manager "healthy" curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
wait_for kubelet "healthy" curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
wait_for kubelet "node $NODE registered" kubectl get node "$NODE"
wait_for kubelet "node $NODE Ready" sh -c \
  "'$BIN/kubectl' --kubeconfig '$S/kubeconfig' get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
wait_for kube-controller-manager "service account default/default exists" kubectl -n default get serviceaccount default

# --- kube-proxy: Services' cluster IPs, for pods and for this machine ---------------
# iptables mode, every Service connection masqueraded (the pods' bridge is not
# filtered by iptables, so a reply from a pod on the same bridge would bypass
# the NAT otherwise); no conntrack sysctls changed, no localhost NodePorts (they
# would set route_localnet). down.sh removes its rules with kube-proxy --cleanup.
cat >"$S/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $S/kube-proxy.kubeconfig
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  masqueradeAll: true
  localhostNodePorts: false
EOF
start kube-proxy "$BIN/kube-proxy" --config "$S/kube-proxy.yaml" --v=1
wait_for kube-proxy "healthy" curl -fsS "http://127.0.0.1:$PROXY_HEALTHZ_PORT/healthz"

cat >"$S/env" <<EOF
KUBECONFIG=$S/kubeconfig
XRUN_K8S_REGISTRY=localhost:$REG_PORT
XRUN_K8S_NODE=$NODE
XRUN_K8S_BIN=$BIN
EOF
trap - EXIT
say "cluster up: node $NODE ($NODE_IP), KUBECONFIG=$S/kubeconfig, registry localhost:$REG_PORT"
echo "$S/env"
