#!/usr/bin/env bash
# The test cluster: a real kube-apiserver (etcd behind it), kube-controller-manager (Job controller,
# garbage collector, namespaces, service accounts) and kube-scheduler, built from the Go module proxy
# (scripts/build-cluster.sh), on loopback with their own certificates; its one node and its pods are
# simulated by kwok. A pod's commands (`kubectl exec`, reins' sandboxes) run for real: kwok's exec
# runs them on this machine inside the pod's own namespaces (a bubblewrap root with the pod's own
# /workspace, /home/sandbox and /tmp, its own PIDs; the host network), as uid 1000, set up per pod
# by scripts/test-cluster-agent.mjs before kwok marks the pod Ready. agent-sandbox's four CRDs
# (cluster/agent-sandbox/crds.yaml) are installed and served by scripts/test-cluster-sandbox-controller.mjs,
# a stand-in for agent-sandbox's own controller (warm pools, claims; the subset reins uses).
# The pods of a Job (reins' trainer Job) also run their container's command in those namespaces,
# with their claims' volumes bound in, and their phase follows its exit (scripts/test-cluster-command.mjs
# says what is simulated: the image, the pod network).
#
#   scripts/test-cluster.sh start   start it (or find it running); prints the kubeconfig path last
#   scripts/test-cluster.sh stop    stop everything it started and remove its state
#   scripts/test-cluster.sh status  exit 0 when it answers
#
# State lives in $REINS_TEST_CLUSTER_DIR (default ~/.cache/reins/test-cluster); the API server
# listens on 127.0.0.1:$REINS_TEST_CLUSTER_PORT (default 26443). Needs root (namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
DIR="${REINS_TEST_CLUSTER_DIR:-$HOME/.cache/reins/test-cluster}"
PORT="${REINS_TEST_CLUSTER_PORT:-26443}"
ETCD_PORT=$((PORT + 1)) ETCD_PEER=$((PORT + 2)) KWOK_PORT=$((PORT + 3)) KCM_PORT=$((PORT + 4)) SCHED_PORT=$((PORT + 5))
KUBECONFIG_FILE="$DIR/kubeconfig"
NODE=reins-sim-0
KWOK_MOD="${REINS_CACHE:-$HOME/.cache/reins}/go/mod/sigs.k8s.io/kwok@$(sed -n 's/^KWOK_VERSION=//p' scripts/build-cluster.sh)"

say() { echo "test-cluster: $*" >&2; }

healthy() {
  [ -f "$DIR/token" ] && curl -sf --max-time 2 --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$DIR/token")" \
    "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1
}

stop_all() {
  for p in sandbox-controller agent kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    if [ -f "$DIR/$p.pid" ]; then
      kill "$(cat "$DIR/$p.pid")" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$(cat "$DIR/$p.pid")" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$(cat "$DIR/$p.pid")" 2>/dev/null || true
      rm -f "$DIR/$p.pid"
    fi
  done
  # Keepers of pods the agent had not cleaned up.
  for f in "$DIR"/pods/*/keeper.outer; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$DIR/etcd" "$DIR/pods" "$DIR/volumes"
}

wait_for() { # what (its pid file and log), seconds, command...
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 10))); do
    "$@" && return 0
    kill -0 "$(cat "$DIR/$what.pid")" 2>/dev/null || { say "$what exited; the end of its log ($DIR/logs/$what.log):"; tail -5 "$DIR/logs/$what.log" >&2; return 1; }
    sleep 0.1
  done
  say "$what did not come up in ${secs}s; the end of its log ($DIR/logs/$what.log):"; tail -5 "$DIR/logs/$what.log" >&2 || true
  return 1
}

make_pki() {
  local pki="$DIR/pki"
  [ -f "$pki/ok" ] && return 0
  mkdir -p "$pki" && cd "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=reins-test-cluster-ca" 2>/dev/null
  for name in apiserver kwok; do
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 3650 -extfile "$name.ext" 2>/dev/null
  done
  openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/token"
  printf '%s,reins-admin,reins-admin,system:masters\n' "$(cat "$DIR/token")" > tokens.csv
  touch ok && cd "$REPO"
}

write_kubeconfig() {
  cat > "$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: reins-test
  cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: "$DIR/pki/ca.crt"}
users:
- name: reins-admin
  user: {token: "$(cat "$DIR/token")"}
contexts:
- name: reins-test
  context: {cluster: reins-test, user: reins-admin, namespace: default}
current-context: reins-test
EOF
}

# kwok's own node and pod stages (from its module), a pod made Ready only once the agent has set
# up its namespaces (annotation sim.reins.dev/ready).
write_kwok_config() {
  local stages="$KWOK_MOD/kustomize/stage"
  # kwok's pod-complete stage (a Job's pod succeeds at once) skips the pods whose command the agent
  # runs (annotation sim.reins.dev/command): their phase comes from that command's exit.
  {
    for f in "$stages"/node/fast/node-initialize.yaml "$stages"/pod/fast/pod-delete.yaml; do cat "$f"; echo "---"; done
    sed '/^    matchExpressions:$/a\    - key: '"'"'.metadata.annotations["sim.reins.dev/command"]'"'"'\n      operator: '"'"'DoesNotExist'"'"'' "$stages/pod/fast/pod-complete.yaml"; echo "---"
    sed '/^    matchExpressions:$/a\    - key: '"'"'.metadata.annotations["sim.reins.dev/ready"]'"'"'\n      operator: '"'"'In'"'"'\n      values: ['"'"'true'"'"']' "$stages/pod/fast/pod-ready.yaml"
  } > "$DIR/kwok.yaml"
  grep -q 'sim.reins.dev/ready' "$DIR/kwok.yaml" || { say "could not gate kwok's pod-ready stage"; return 1; }
  grep -q 'sim.reins.dev/command' "$DIR/kwok.yaml" || { say "could not gate kwok's pod-complete stage"; return 1; }
}

start() {
  if healthy; then echo "$KUBECONFIG_FILE"; return 0; fi
  [ "$(id -u)" = 0 ] || { say "needs root (each pod's namespaces)"; exit 1; }
  stop_all
  local bin; bin=$(bash scripts/build-cluster.sh)
  mkdir -p "$DIR/logs" "$DIR/pods" "$DIR/shims"
  make_pki
  write_kubeconfig
  write_kwok_config
  local pki="$DIR/pki" started; started=$(date +%s%N)
  (cd "$DIR" && exec setsid "$bin/etcd" --name reins-test --data-dir "$DIR/etcd" \
     --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
     --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
     --initial-cluster "reins-test=http://127.0.0.1:$ETCD_PEER" --log-level warn --quota-backend-bytes 4294967296 \
     >"$DIR/logs/etcd.log" 2>&1 </dev/null & echo $! >"$DIR/etcd.pid")
  wait_for etcd 30 curl -sf -o /dev/null "http://127.0.0.1:$ETCD_PORT/health"
  (exec setsid "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
     --secure-port "$PORT" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
     --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" --authorization-mode RBAC \
     --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
     --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
     --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
     --enable-priority-and-fairness=false --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
     --profiling=false --v=1 >"$DIR/logs/kube-apiserver.log" 2>&1 </dev/null & echo $! >"$DIR/kube-apiserver.pid")
  wait_for kube-apiserver 120 healthy
  # agent-sandbox's CRDs before the controller manager, so its garbage collector follows their
  # ownerReferences from the start (it finds new resource types only every 30 s).
  rm -f "$DIR/controller.ready"
  (exec setsid node scripts/test-cluster-sandbox-controller.mjs --dir "$DIR" --server "https://127.0.0.1:$PORT" \
     --crds "$REPO/cluster/agent-sandbox/crds.yaml" \
     >"$DIR/logs/sandbox-controller.log" 2>&1 </dev/null & echo $! >"$DIR/sandbox-controller.pid")
  wait_for sandbox-controller 60 test -f "$DIR/controller.ready"
  (exec setsid "$bin/kube-controller-manager" --kubeconfig "$KUBECONFIG_FILE" --leader-elect=false \
     --controllers job,garbagecollector,namespace,serviceaccount,serviceaccount-token,ttl-after-finished,endpointslice,podgc,persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller \
     --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
     --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --concurrent-gc-syncs 20 --kube-api-qps 500 --kube-api-burst 1000 \
     --v=1 >"$DIR/logs/kube-controller-manager.log" 2>&1 </dev/null & echo $! >"$DIR/kube-controller-manager.pid")
  (exec setsid "$bin/kube-scheduler" --kubeconfig "$KUBECONFIG_FILE" --leader-elect=false --bind-address 127.0.0.1 \
     --secure-port "$SCHED_PORT" --kube-api-qps 500 --kube-api-burst 1000 --v=1 \
     >"$DIR/logs/kube-scheduler.log" 2>&1 </dev/null & echo $! >"$DIR/kube-scheduler.pid")
  # The agent installs kwok's Exec CRD, registers the node, then sets up each pod bound to it.
  # A Job pod's command the image lacks (torchrun) comes from scripts/install-python.sh's venv.
  (exec setsid node scripts/test-cluster-agent.mjs --dir "$DIR" --server "https://127.0.0.1:$PORT" --node "$NODE" \
     --kwok-crds "$KWOK_MOD/kustomize/crd/bases" --venv "$(dirname "$(dirname "$(bash scripts/install-python.sh --print)")")" \
     >"$DIR/logs/agent.log" 2>&1 </dev/null & echo $! >"$DIR/agent.pid")
  wait_for agent 60 test -f "$DIR/agent.ready"
  (PATH="$DIR/shims:$PATH" REINS_SIM_DIR="$DIR" exec setsid "$bin/kwok" --kubeconfig "$KUBECONFIG_FILE" --config "$DIR/kwok.yaml" \
     --manage-single-node "$NODE" --enable-crds Exec --node-ip 127.0.0.1 --node-port "$KWOK_PORT" \
     --server-address "127.0.0.1:$KWOK_PORT" --tls-cert-file "$pki/kwok.crt" --tls-private-key-file "$pki/kwok.key" \
     --cidr 10.244.0.0/16 >"$DIR/logs/kwok.log" 2>&1 </dev/null & echo $! >"$DIR/kwok.pid")
  wait_for kwok 60 node -e "
    const {execFileSync} = require('node:child_process');
    const out = execFileSync('curl', ['-sf', '--cacert', '$pki/ca.crt', '-H', 'Authorization: Bearer $(cat "$DIR/token")', 'https://127.0.0.1:$PORT/api/v1/nodes/$NODE']);
    const node = JSON.parse(out);
    const ready = (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    process.exit(ready && (node.spec?.taints ?? []).length === 0 ? 0 : 1);"
  # Pods are refused until the controller manager made the namespace's default service account.
  wait_for kube-controller-manager 60 curl -sf -o /dev/null --cacert "$pki/ca.crt" -H "Authorization: Bearer $(cat "$DIR/token")" \
    "https://127.0.0.1:$PORT/api/v1/namespaces/default/serviceaccounts/default"
  say "up in $(( ($(date +%s%N) - started) / 1000000 )) ms (API server https://127.0.0.1:$PORT; logs in $DIR/logs)"
  echo "$KUBECONFIG_FILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop_all; rm -f "$DIR/agent.ready" "$DIR/controller.ready"; say "stopped" ;;
  status) healthy ;;
  *) echo "usage: scripts/test-cluster.sh start|stop|status" >&2; exit 2 ;;
esac
