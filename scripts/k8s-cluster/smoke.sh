#!/usr/bin/env bash
# smoke.sh STATE_DIR: checks a cluster that up.sh started, the way the xrun
# backend will use it:
#   1. an image made FROM scratch with a static busybox by the local docker,
#      pushed to the cluster's registry (localhost:5000);
#   2. a batch/v1 Job from that image, as uid 65532 with a memory limit, runs
#      `echo hello` to completion, and kubectl logs shows hello, the uid and
#      the limit seen from inside the container, and the pod has eth0 and an IP;
#   3. the service-account token controller fills a token Secret;
#   4. a pod asking for an extended resource the node lacks (nvidia.com/gpu)
#      stays Pending with PodScheduled=False/Unschedulable and a
#      FailedScheduling event.
set -euo pipefail

t0=$SECONDS
say() { printf '[smoke %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
die() { printf 'smoke.sh: FAIL: %s\n' "$*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: smoke.sh STATE_DIR"
S="$(cd "$1" && pwd)"
[ -f "$S/env" ] || die "$S/env missing: is the cluster up (up.sh $S)?"
set -a; . "$S/env"; set +a
k() { "$XRUN_K8S_BIN/kubectl" "$@"; }
ns=default
job=xrun-smoke
pending=xrun-smoke-unschedulable
image="$XRUN_K8S_REGISTRY/xrun-smoke:1"
limit_mi=64

busybox=/bin/busybox
[ -x "$busybox" ] || die "$busybox missing (apt-get install busybox-static; build.sh does)"
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is not static (apt-get install busybox-static; build.sh does)"

# --- 1. image ----------------------------------------------------------------------
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$busybox" "$ctx/busybox"
cat >"$ctx/Dockerfile" <<'EOF'
FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
USER 65532:65532
EOF
say "docker build -t $image"
out="$(docker build -q -t "$image" "$ctx" 2>&1)" || { printf '%s\n' "$out" >&2; die "docker build failed"; }
say "docker push $image"
out="$(docker push "$image" 2>&1)" || { printf '%s\n' "$out" >&2; die "docker push failed"; }

# --- 2. job --------------------------------------------------------------------------
k -n $ns delete job $job --ignore-not-found --wait=true >/dev/null
k -n $ns delete pod $pending --ignore-not-found --wait=true >/dev/null
k -n $ns apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $job
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 120
  template:
    spec:
      restartPolicy: Never
      securityContext:
        runAsUser: 65532
        runAsGroup: 65532
        runAsNonRoot: true
      containers:
      - name: main
        image: $image
        imagePullPolicy: Always
        command: ["/bin/sh", "-c", "echo hello; echo uid=\$(id -u); echo memlimit=\$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max); echo net=\$(ls /sys/class/net)"]
        resources:
          requests: {cpu: 100m, memory: ${limit_mi}Mi}
          limits: {cpu: 500m, memory: ${limit_mi}Mi}
EOF
say "job/$job created; waiting for Complete"
if ! k -n $ns wait --for=condition=Complete job/$job --timeout=120s >/dev/null; then
  k -n $ns describe job/$job >&2 || true
  k -n $ns describe pods -l job-name=$job >&2 || true
  die "job/$job did not complete"
fi
logs="$(k -n $ns logs job/$job)"
printf '%s\n' "$logs" | sed 's/^/  | /' >&2
grep -x hello <<<"$logs" >/dev/null || die "job logs do not say hello"
grep -x uid=65532 <<<"$logs" >/dev/null || die "job did not run as uid 65532"
grep -x "memlimit=$((limit_mi * 1024 * 1024))" <<<"$logs" >/dev/null || die "job's memory limit is not ${limit_mi}Mi"
grep '^net=.*eth0' <<<"$logs" >/dev/null || die "job's pod has no eth0 (CNI)"
pod_ip="$(k -n $ns get pods -l job-name=$job -o jsonpath='{.items[0].status.podIP}')"
[ -n "$pod_ip" ] || die "job's pod has no IP"
say "job/$job: Complete, logs say hello as uid 65532 under a ${limit_mi}Mi limit, pod IP $pod_ip"

# --- 3. the service-account token controller fills a token Secret -----------------
k -n $ns delete secret xrun-smoke-token --ignore-not-found >/dev/null
k -n $ns apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: xrun-smoke-token
  annotations:
    kubernetes.io/service-account.name: default
type: kubernetes.io/service-account-token
EOF
k -n $ns wait --for=jsonpath='{.data.token}' secret/xrun-smoke-token --timeout=30s >/dev/null ||
  die "the token controller did not fill secret/xrun-smoke-token"
k -n $ns delete secret xrun-smoke-token >/dev/null
say "secret/xrun-smoke-token: filled by the service-account token controller"

# --- 4. an unschedulable pod -----------------------------------------------------------
k -n $ns apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pending
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: $image
    command: ["/bin/true"]
    resources:
      limits: {nvidia.com/gpu: 1}
EOF
cond='{.status.conditions[?(@.type=="PodScheduled")].reason}'
k -n $ns wait --for=jsonpath="$cond"=Unschedulable pod/$pending --timeout=60s >/dev/null ||
  die "pod/$pending did not get PodScheduled=False/Unschedulable"
phase="$(k -n $ns get pod $pending -o jsonpath='{.status.phase}')"
[ "$phase" = Pending ] || die "pod/$pending is $phase, not Pending"
msg="$(k -n $ns get pod $pending -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
for i in $(seq 1 40); do
  ev="$(k -n $ns get events --field-selector "involvedObject.name=$pending,reason=FailedScheduling" -o name)"
  [ -n "$ev" ] && break
  sleep 0.5
done
[ -n "$ev" ] || die "no FailedScheduling event for pod/$pending"
say "pod/$pending: Pending, Unschedulable: $msg"

k -n $ns delete job $job --wait=false >/dev/null
k -n $ns delete pod $pending --wait=false >/dev/null
say "smoke: OK"
