#!/bin/bash
# A real Kubernetes cluster whose nodes are the hosts of a linerate lab.
#
#   scripts/k8s-lab.sh build                       build (once) and cache the Kubernetes binaries
#   scripts/k8s-lab.sh up [--nodes N] [--name NAME] [--manifest FILE]...
#   scripts/k8s-lab.sh status [--name NAME]
#   scripts/k8s-lab.sh kubectl [--name NAME] -- ARGS...   kubectl against the cluster
#   scripts/k8s-lab.sh exec [--name NAME] -- CMD...       CMD at the controller's seat (see below)
#   scripts/k8s-lab.sh shape [--name NAME] NODE RATE      tbf on NODE's lab0 (RATE 0 removes it)
#   scripts/k8s-lab.sh check [--nodes N] [--name NAME]    up, fleet run --k8s and the fleet Job with h02 at 1gbit, down
#   scripts/k8s-lab.sh down [--name NAME]
#
# Layout. `linerate lab up --name NAME --hosts N` makes hosts lr-NAME-h01 …
# (198.18.0.<i> on lab0) joined by a bridge in lr-NAME-sw (198.18.0.254).
# The switch namespace is the control plane's seat: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and CoreDNS run there, bound to
# 198.18.0.254 and loopback only. Every lab host is a node: its own
# containerd and kubelet, started in the host's network namespace and in
# a mount and UTS namespace of their own (a hostNetwork pod sees the
# node's name as its hostname, as on a real node; see start_node). Nothing has an address or a
# route outside 198.18.0.0/15 and loopback, and nothing is routed off the
# machine: the lab's namespaces have no default route, the root namespace
# gets no route or address, and CoreDNS answers cluster.local only (no
# forwarding). Pods get a resolv.conf naming CoreDNS and nothing else.
#
# linerate's agents are hostNetwork pods. Other pods (the fleet Job) get a
# bridge in their node's namespace, 10.244.<i>.0/24, masqueraded to the
# node's lab address; there is no kube-proxy, so Service virtual IPs do
# not work (headless Services, through CoreDNS, do). The agents' image is
# built from this checkout's static binary as a single-layer OCI tarball,
# imported into each node's containerd; the manifests'
# registry.example.com/linerate:latest is rewritten to it with
# imagePullPolicy: Never, so no registry is ever asked.
#
# The controller's seat: `exec` runs CMD in the switch namespace with a
# private mount namespace whose /etc/resolv.conf names CoreDNS, so
# `linerate fleet run --k8s linerate-agents.linerate` finds the agents the
# way the shipped Job does, through the headless Service's DNS records.
#
# Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kubectl) and CoreDNS are built from the Go module proxy into
# $K8S_CACHE (default /var/cache/linerate-k8s), keyed on their versions,
# once; later runs reuse them. Debian's etcd, containerd, runc and CNI plugins are installed
# with apt when missing. Everything a cluster writes is under
# $K8S_LAB_DIR (default /var/lib/linerate-k8s/NAME), in its namespaces and
# in its own cgroups; `down` removes all of it, and the lab if `up` made it.
#
# Environment: K8S_VERSION (v1.37.2), COREDNS_VERSION (v1.15.0), K8S_KEEP,
# K8S_CHECK_RATE, K8S_CHECK_TIME (see check),
# K8S_CACHE, K8S_LAB_DIR, LINERATE (a linerate binary; default: built from
# this checkout), LINERATE_STATE_DIR (the lab's records, as for linerate).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

K8S_VERSION=${K8S_VERSION:-v1.37.2}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
K8S_CACHE=${K8S_CACHE:-/var/cache/linerate-k8s}
cache=$K8S_CACHE/$K8S_VERSION
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

say() { printf 'k8s-lab: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

# --- build -----------------------------------------------------------------

# need_go puts Go on PATH. It is called at the top level only: go-env.sh
# sets variables of its own (d, have…) that would overwrite a function's.
need_go() {
  # shellcheck source=scripts/go-env.sh
  . "$repo/scripts/go-env.sh"
  export GOFLAGS=-buildvcs=false
}

# build_k8s builds the five Kubernetes binaries of $K8S_VERSION into
# $cache/bin, unless they are there. k8s.io/kubernetes is required as a
# module and every staging module its go.mod replaces with ./staging/… is
# replaced by the same module at v0.<minor>.<patch>, the list read from
# that go.mod so that it follows the version. Built into a temporary
# directory and moved in whole, so a killed build leaves no half cache.
build_k8s() {
  local have=1 c
  for c in "${components[@]}"; do [ -x "$cache/bin/$c" ] || have=0; done
  [ $have = 1 ] && return 0
  say "building Kubernetes $K8S_VERSION from the Go module proxy into $cache (once: 8 minutes on an idle 2-CPU machine, up to an hour on a busy one)"
  local t0 src mod sv minor ldf
  t0=$(date +%s)
  mkdir -p "$cache"
  src=$cache/src
  rm -rf "$src" "$cache/bin.new"
  mkdir -p "$src"
  sv=v0.${K8S_VERSION#v1.}
  mod=$(cd "$src" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$mod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
  {
    echo "module linerate.local/k8sbuild"
    echo
    echo "go $(awk '/^go /{print $2; exit}' "$mod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    grep -E '=> \./staging' "$mod" | awk -v sv="$sv" '{print "\t" $1 " => " $1 " " sv}'
    echo ")"
  } >"$src/go.mod"
  local pkgs=("${components[@]/#/k8s.io/kubernetes/cmd/}")
  (cd "$src" && go get "${pkgs[@]/%/@$K8S_VERSION}") >&2
  minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  # Without the version ldflags every component reports v0.0.0-master.
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ldf+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  ldf+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  mkdir -p "$cache/bin.new"
  (cd "$src" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "$ldf" -o "$cache/bin.new/" "${pkgs[@]}") >&2
  rm -rf "${cache:?}/bin"
  mv "$cache/bin.new" "$cache/bin"
  echo "$(($(date +%s) - t0))" >"$cache/build-seconds"
  say "built Kubernetes $K8S_VERSION in $(cat "$cache/build-seconds") s"
}

# build_coredns builds CoreDNS with the few plugins the cluster uses (no
# forward: names outside cluster.local are never asked of anyone).
build_coredns() {
  local d=$K8S_CACHE/coredns-$COREDNS_VERSION t0
  [ -x "$d/coredns" ] && return 0
  say "building CoreDNS $COREDNS_VERSION from the Go module proxy into $d (once)"
  t0=$(date +%s)
  rm -rf "$d/src"
  mkdir -p "$d/src"
  cat >"$d/src/main.go" <<'EOF'
// CoreDNS with only the plugins a lab cluster needs: cluster.local from
// the Kubernetes API, and nothing forwarded anywhere.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order in which the plugins see a query (CoreDNS's plugin.cfg).
	dnsserver.Directives = []string{"bind", "health", "ready", "errors", "log", "kubernetes"}
}

func main() { coremain.Run() }
EOF
  printf 'module linerate.local/coredns\n\ngo 1.26.0\n' >"$d/src/go.mod"
  local pkgs=(core/dnsserver coremain plugin/bind plugin/errors plugin/health plugin/kubernetes plugin/log plugin/ready)
  pkgs=("${pkgs[@]/#/github.com/coredns/coredns/}")
  (cd "$d/src" && go get "${pkgs[@]/%/@$COREDNS_VERSION}") >&2
  (cd "$d/src" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w" -o "$d/coredns.new" .) >&2
  mv "$d/coredns.new" "$d/coredns"
  echo "$(($(date +%s) - t0))" >"$d/build-seconds"
  say "built CoreDNS $COREDNS_VERSION in $(cat "$d/build-seconds") s"
}

# mkimage packs one static binary as /usr/local/bin/NAME into a
# single-layer OCI image-layout tarball that `ctr images import` takes:
# an uncompressed layer, a config whose PATH finds the binary, and an
# index entry that names the image. No registry, no image tool.
mkimage() {
  local bin=$1 ref=$2 out=$3 name w ld ls cd cs md ms
  name=$(basename "$bin")
  w=$(mktemp -d)
  mkdir -p "$w/root/usr/local/bin" "$w/oci/blobs/sha256"
  install -m 0755 "$bin" "$w/root/usr/local/bin/$name"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$w/root" -cf "$w/layer.tar" usr
  put() {
    local d
    d=$(sha256sum "$1" | cut -d' ' -f1)
    cp "$1" "$w/oci/blobs/sha256/$d"
    echo "$d $(stat -c %s "$1")"
  }
  read -r ld ls < <(put "$w/layer.tar")
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/usr/local/bin/%s"],"Env":["PATH=/usr/local/bin:/usr/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$name" "$ld" >"$w/config.json"
  read -r cd cs < <(put "$w/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$cs" "$ld" "$ls" >"$w/manifest.json"
  read -r md ms < <(put "$w/manifest.json")
  printf '{"imageLayoutVersion":"1.0.0"}' >"$w/oci/oci-layout"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$ref" "${ref##*:}" >"$w/oci/index.json"
  tar -C "$w/oci" -cf "$out" oci-layout index.json blobs
  rm -rf "$w"
}

# build_pause makes the pod sandbox image: a static process that waits
# for SIGTERM and reaps what it inherits (the pause container's job).
build_pause() {
  local d=$K8S_CACHE/pause
  [ -f "$d/pause.tar" ] && return 0
  rm -rf "$d"
  mkdir -p "$d/src"
  cat >"$d/src/main.go" <<'EOF'
// The pod sandbox: block until SIGINT or SIGTERM, reaping children.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range c {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
EOF
  printf 'module linerate.local/pause\n\ngo 1.26.0\n' >"$d/src/go.mod"
  (cd "$d/src" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$d/pause" .)
  mkimage "$d/pause" localhost/k8s/pause:local "$d/pause.tar.new"
  mv "$d/pause.tar.new" "$d/pause.tar"
}

cmd_build() {
  build_k8s
  build_coredns
  build_pause
}

# --- the cluster -------------------------------------------------------------

name=k8s
nodes=3
manifests=()
cp_ip=198.18.0.254 # the lab switch's address: the control plane's seat
# The placeholder image of the shipped manifests, and what it becomes.
image_placeholder=registry.example.com/linerate:latest
image_ref=localhost/linerate:lab
# The values kubelet wants for these global sysctls; it would write them
# (kernel.panic=10, kernel.panic_on_oops=1 … on a machine others share).
# Each node's mount namespace shows it these values instead (see
# start_node), so it finds nothing to change.
kubelet_sysctls="vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000"

parse_opts() {
  while [ $# -gt 0 ]; do
    case $1 in
    --nodes) nodes=${2:?--nodes N}; shift 2 ;;
    --name) name=${2:?--name NAME}; shift 2 ;;
    --manifest) manifests+=("$(realpath "${2:?--manifest FILE}")"); shift 2 ;;
    --) shift; rest=("$@"); return ;;
    -*) die "unknown option $1" ;;
    *) rest+=("$1"); shift ;;
    esac
  done
}

setup_vars() {
  [[ $name =~ ^[a-z0-9][a-z0-9-]{0,9}$ ]] || die "--name $name: a lab name (lower-case letters, digits and '-', at most 10)"
  [[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 3 ] && [ "$nodes" -le 16 ] ||
    die "--nodes $nodes: 3 to 16 (the lab of many hosts has at least 3)"
  W=${K8S_LAB_DIR:-/var/lib/linerate-k8s/$name}
  sw=lr-$name-sw
  bin=$cache/bin
  coredns=$K8S_CACHE/coredns-$COREDNS_VERSION/coredns
  [ ${#manifests[@]} -gt 0 ] || manifests=("$repo/deploy/kubernetes/namespace.yaml"
    "$repo/deploy/kubernetes/agent-daemonset.yaml" "$repo/deploy/kubernetes/agent-service.yaml")
}

node_name() { printf 'h%02d' "$1"; }
node_ns() { echo "lr-$name-$(node_name "$1")"; }

need_root() { [ "$(id -u)" = 0 ] || die "run as root (network namespaces, mounts, cgroups)"; }

# need_packages installs Debian's etcd, containerd, runc and CNI plugins
# (and the tools used here) when one is missing: the machine may be new.
need_packages() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v etcdctl >/dev/null || missing+=(etcd-client)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v tc >/dev/null || missing+=(iproute2)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v nft >/dev/null || missing+=(nftables)
  command -v getent >/dev/null || missing+=(libc-bin)
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v python3 >/dev/null || missing+=(python3)
  [ ${#missing[@]} = 0 ] && return 0
  say "installing ${missing[*]} (apt)"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# linerate_bin is the linerate binary of the agents' image and of the
# controller: $LINERATE, or a static build of this checkout.
linerate_bin() {
  if [ -n "${LINERATE:-}" ]; then
    realpath "$LINERATE"
    return
  fi
  mkdir -p "$W"
  (cd "$repo" && CGO_ENABLED=0 go build -trimpath -o "$W/linerate" ./cmd/linerate) >&2
  echo "$W/linerate"
}

alive() { [ -f "$W/pids/$1" ] && kill -0 "$(cat "$W/pids/$1")" 2>/dev/null; }

# start NAME CMD... starts CMD in its own session, its log and pid under
# $W. setsid, nsenter and unshare all exec, so the pid is CMD's own.
start() {
  local n=$1
  shift
  setsid "$@" >"$W/logs/$n.log" 2>&1 </dev/null &
  echo $! >"$W/pids/$n"
}

# at_sw runs a command in the switch's network namespace.
at_sw() { nsenter --net="/run/netns/$sw" "$@"; }

kc() { at_sw "$bin/kubectl" --kubeconfig "$W/admin.kubeconfig" "$@"; }

# seat runs CMD at the controller's seat: the switch's network namespace,
# and a mount namespace of its own whose /etc/resolv.conf names the
# cluster's DNS, as a pod's would.
seat() {
  at_sw unshare --mount sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$W/seat-resolv.conf" \
    env PATH="$W:$bin:$PATH" KUBECONFIG="$W/admin.kubeconfig" "$@"
}

wait_for() { # SECONDS WHAT CMD...
  local t=$1 what=$2 i
  shift 2
  for ((i = 0; i < t * 2; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "$what did not come within $t s (logs: $W/logs)"
}

gen_pki() {
  local p=$W/pki n
  mkdir -p "$p"
  (
    cd "$p"
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=linerate-k8s-lab-ca" -out ca.crt
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cert() { # NAME CN O SANS EKU
      openssl genrsa -out "$1.key" 2048 2>/dev/null
      openssl req -new -key "$1.key" -subj "/CN=$2${3:+/O=$3}" -out "$1.csr"
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$5"
        [ -z "$4" ] || echo "subjectAltName=$4"
      } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    }
    cert apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:$cp_ip" serverAuth
    cert admin admin system:masters "" clientAuth
    cert apiserver-kubelet-client kube-apiserver-kubelet-client kubelet-api-admin "" clientAuth
    # Each kubelet is system:node:NODE, so the Node authorizer lets it
    # read only what its own pods need (their Secret included).
    for ((i = 1; i <= nodes; i++)); do
      n=$(node_name $i)
      cert "kubelet-$n" "system:node:$n" system:nodes "" clientAuth
    done
  )
}

kubeconfig() { # CERTNAME
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {certificate-authority: $W/pki/ca.crt, server: "https://$cp_ip:6443"}
users:
- name: $1
  user: {client-certificate: $W/pki/$1.crt, client-key: $W/pki/$1.key}
contexts:
- name: lab
  context: {cluster: lab, user: $1}
current-context: lab
EOF
}

start_control_plane() {
  local p=$W/pki
  ip -n "$sw" link set lo up
  start etcd nsenter --net="/run/netns/$sw" etcd --name lab --data-dir "$W/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster lab=http://127.0.0.1:2380
  # Bound to the switch's lab address only; InternalIP first, so the
  # apiserver reaches a kubelet at its lab address and never resolves a
  # node's name through the machine's resolver.
  start kube-apiserver nsenter --net="/run/netns/$sw" "$bin/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=$cp_ip --advertise-address=$cp_ip --secure-port=6443 \
    --tls-cert-file=$p/apiserver.crt --tls-private-key-file=$p/apiserver.key --client-ca-file=$p/ca.crt \
    --service-account-key-file=$p/sa.pub --service-account-signing-key-file=$p/sa.key \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC --allow-privileged=true \
    --enable-admission-plugins=NodeRestriction \
    --kubelet-preferred-address-types=InternalIP \
    --kubelet-client-certificate=$p/apiserver-kubelet-client.crt --kubelet-client-key=$p/apiserver-kubelet-client.key
  wait_for 120 "the apiserver" kc get --raw /readyz
  # The apiserver's own client to the kubelets (logs, exec) may use their API.
  kc create clusterrolebinding lab-apiserver-kubelet --clusterrole=system:kubelet-api-admin \
    --group=kubelet-api-admin >/dev/null
  start kube-controller-manager nsenter --net="/run/netns/$sw" "$bin/kube-controller-manager" --kubeconfig="$W/admin.kubeconfig" \
    --authentication-kubeconfig="$W/admin.kubeconfig" --authorization-kubeconfig="$W/admin.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --service-account-private-key-file=$p/sa.key \
    --root-ca-file=$p/ca.crt --cluster-signing-cert-file=$p/ca.crt --cluster-signing-key-file=$p/ca.key \
    --use-service-account-credentials=false
  start kube-scheduler nsenter --net="/run/netns/$sw" "$bin/kube-scheduler" --kubeconfig="$W/admin.kubeconfig" \
    --authentication-kubeconfig="$W/admin.kubeconfig" --authorization-kubeconfig="$W/admin.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false
  # CoreDNS answers cluster.local from the API and nothing else: no
  # forward plugin, so no name is ever asked of a resolver off the lab.
  cat >"$W/Corefile" <<EOF
cluster.local:53 {
    bind $cp_ip
    errors
    ready 127.0.0.1:8181
    kubernetes cluster.local {
        kubeconfig $W/admin.kubeconfig lab
    }
}
EOF
  start coredns nsenter --net="/run/netns/$sw" "$coredns" -conf "$W/Corefile"
  printf 'nameserver %s\n' $cp_ip >"$W/resolv.conf"
  printf 'search linerate.svc.cluster.local svc.cluster.local cluster.local\nnameserver %s\noptions ndots:5\n' $cp_ip \
    >"$W/seat-resolv.conf"
}

# start_node starts containerd and kubelet for lab host i, both in the
# host's network namespace and in one mount and UTS namespace of their own:
# hostNetwork pods share containerd's namespaces, so an agent sees the
# node's name as its hostname, and everything the node mounts (overlay
# roots, secret volumes, pod network namespaces, and its private
# /run/containerd, /run/netns, /var/lib/kubelet and /var/log/containers)
# lives and dies with that mount namespace.
start_node() {
  local i=$1 n ns ip d cg h p seg kv
  n=$(node_name "$i")
  ns=$(node_ns "$i")
  ip=198.18.0.$i
  d=$W/$n
  mkdir -p "$d/sysctl" "$d/pod-logs" "$d/cni"
  # The node's own agent key, derived from the fleet's secret, where the
  # DaemonSet's hostPath takes it: /etc/linerate/node.key, as the node
  # sees it (a bind mount in the node's mount namespace).
  install -d -m 700 "$d/etc-linerate"
  "$W/linerate" serve --token-file "$W/fleet-secret" --node-key "$n" --new-token-file "$d/etc-linerate/node.key" >/dev/null
  # The node's netfilter tables before kubelet and the pod network add
  # theirs (iptables-nft: ip/ip6 filter, nat, mangle), for down.
  nsenter --net="/run/netns/$ns" nft list tables >"$d/nft-tables"
  # The pod network of the node: a bridge inside the node's namespace,
  # 10.244.<i>.0/24, masqueraded to the node's lab address. Pods reach the
  # lab (the agents, CoreDNS) and nothing else: the node has no route off
  # the lab. hostNetwork pods (the agents) do not use it; the fleet Job does.
  cat >"$d/cni/10-pods.conflist" <<EOF
{"cniVersion":"0.4.0","name":"lab-pods","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":true,
 "ipam":{"type":"host-local","dataDir":"$d/cni-ipam","ranges":[[{"subnet":"10.244.$i.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}}]}
EOF
  # Its own cgroups, below this shell's memory cgroup (the cgroupfs
  # driver; cpuset needs its cpus and mems copied down by hand).
  cg=$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)
  cg=${cg%/}/linerate-k8s-$name-$n
  echo "$cg" >"$d/cgroup"
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h$cg"
    if [ -f "$h/cpuset.cpus" ]; then
      p=${h%/}
      for seg in $(echo "$cg" | tr / ' '); do
        [ -s "$p/$seg/cpuset.cpus" ] || cat "$p/cpuset.cpus" >"$p/$seg/cpuset.cpus"
        [ -s "$p/$seg/cpuset.mems" ] || cat "$p/cpuset.mems" >"$p/$seg/cpuset.mems"
        p=$p/$seg
      done
    fi
  done
  cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/k8s/pause:local"
  enable_cdi = false
  # Without CAP_SYS_RESOURCE runc cannot lower the sandbox's oom_score_adj
  # to -998; clamp it to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
  cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $cg
containerRuntimeEndpoint: unix://$d/containerd.sock
failSwapOn: false
address: $ip
healthzBindAddress: 127.0.0.1
staticPodPath: ""
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $W/pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$cp_ip]
resolvConf: $W/resolv.conf
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podPidsLimit: -1
podLogsDir: $d/pod-logs
EOF
  kubeconfig "kubelet-$n" >"$d/kubelet.kubeconfig"
  # What kubelet reads of the global sysctls: the values it wants, where
  # the machine's differ.
  local masks="" f
  for kv in $kubelet_sysctls; do
    f=$d/sysctl/${kv%=*}
    if [ "$(cat "/proc/sys/${kv%=*}")" != "${kv#*=}" ]; then
      mkdir -p "$(dirname "$f")"
      echo "${kv#*=}" >"$f"
      masks+="mount --bind $f /proc/sys/${kv%=*} && "
    fi
  done
  start "containerd-$n" nsenter --net="/run/netns/$ns" unshare --mount --uts sh -c "
    echo $n >/proc/sys/kernel/hostname &&
    $masks
    mount -t tmpfs -o mode=0755 tmpfs /run/containerd &&
    mount -t tmpfs -o mode=0755 tmpfs /run/netns &&
    mount -t tmpfs -o mode=0755 tmpfs /var/lib/kubelet &&
    mount -t tmpfs -o mode=0755 tmpfs /var/log/containers &&
    mount --bind $d/etc-linerate /etc/linerate &&
    exec containerd --config $d/containerd.toml"
  wait_for 30 "containerd of $n" test -S "$d/containerd.sock"
  readlink "/proc/$(cat "$W/pids/containerd-$n")/ns/mnt" >"$d/mntns"
  for img in "$K8S_CACHE/pause/pause.tar" "$W/linerate.tar"; do
    ctr -a "$d/containerd.sock" -n k8s.io images import "$img" >/dev/null
  done
  local cpid
  cpid=$(cat "$W/pids/containerd-$n")
  start "kubelet-$n" nsenter --net="/run/netns/$ns" --mount="/proc/$cpid/ns/mnt" --uts="/proc/$cpid/ns/uts" \
    "$bin/kubelet" --config="$d/kubelet.yaml" --kubeconfig="$d/kubelet.kubeconfig" \
    --hostname-override="$n" --node-ip="$ip" --root-dir="$d/kubelet" --cert-dir="$d/kubelet-pki"
}

# rewrite_manifest points the shipped manifests' placeholder image at the
# imported one, never pulled, and RELAY_PEERS (the agents') and MESH_PEERS (the
# mesh's) at the lab's network.
rewrite_manifest() {
  awk -v from="$image_placeholder" -v to="$image_ref" -v peers="198.18.0.0/24" '
    relay && /^ *value:/ { sub(/value:.*/, "value: " peers); relay = 0 }
    { if ($0 !~ /^ *- name: (RELAY|MESH)_PEERS *$/) relay = relay && !/^ *- name:/; else relay = 1 }
    $0 ~ "^[ -]*image: *\"?" from "\"?[ ]*$" {
      match($0, /^ */); ind = RLENGTH
      if (substr($0, ind + 1, 2) == "- ") ind += 2
      sub(from, to)
      print
      printf "%*simagePullPolicy: Never\n", ind, ""
      next
    }
    { print }' "$1"
}

cmd_up() {
  need_root
  setup_vars
  if alive kube-apiserver; then
    say "cluster $name is up already ($W)"
    cmd_status
    return 0
  fi
  [ -d "$W" ] && cmd_down
  need_packages
  cmd_build
  local t0 lr i n
  t0=$(date +%s.%N)
  mkdir -p "$W/logs" "$W/pids"
  lr=$(linerate_bin)
  echo "$lr" >"$W/linerate-path"
  [ "$lr" = "$W/linerate" ] || cp "$lr" "$W/linerate"
  if [ -e "/run/netns/$sw" ]; then
    say "reusing lab $name"
  else
    touch "$W/lab-made"
  fi
  "$W/linerate" lab up --name "$name" --hosts "$nodes" >&2
  mkimage "$W/linerate" "$image_ref" "$W/linerate.tar"
  # The node namespaces' mount points (kept empty on the machine itself).
  for d in /run/containerd /var/lib/kubelet /var/log/containers /etc/linerate; do
    [ -d "$d" ] || { mkdir -p "$d" && echo "$d" >>"$W/made-dirs"; }
  done
  gen_pki
  kubeconfig admin >"$W/admin.kubeconfig"
  # The fleet's secret, as deploy/kubernetes/README.md makes it: the fleet
  # Job's Secret, and what each node's key is derived from.
  "$W/linerate" serve --new-token-file "$W/fleet-secret" >/dev/null
  start_control_plane
  for ((i = 1; i <= nodes; i++)); do start_node "$i"; done
  local all=()
  for ((i = 1; i <= nodes; i++)); do all+=("node/$(node_name $i)"); done
  wait_for 120 "the nodes" kc get "${all[@]}"
  kc wait --for=condition=Ready "${all[@]}" --timeout=120s >/dev/null
  wait_for 60 "CoreDNS" seat getent hosts kubernetes.default.svc.cluster.local
  kc create namespace linerate >/dev/null
  kc -n linerate create secret generic linerate-fleet-secret --from-file=fleet-secret="$W/fleet-secret" >/dev/null
  for m in "${manifests[@]}"; do
    rewrite_manifest "$m" | kc apply -f - >&2
  done
  for ds in $(kc get ds -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}'); do
    kc -n "${ds%/*}" rollout status "ds/${ds#*/}" --timeout=180s >&2
  done
  echo "$nodes" >"$W/nodes"
  say "cluster $name up: $nodes nodes Ready, DaemonSets rolled out, in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
  cmd_status
}

cmd_status() {
  setup_vars
  [ -d "$W" ] || { say "no cluster $name"; return 1; }
  local p
  for p in "$W"/pids/*; do
    [ -e "$p" ] || continue
    if kill -0 "$(cat "$p")" 2>/dev/null; then echo "running  $(basename "$p") (pid $(cat "$p"))"; else echo "STOPPED  $(basename "$p")"; fi
  done
  alive kube-apiserver || return 1
  kc get nodes -o wide
  kc get pods -A -o wide
}

# shape NODE RATE: tbf on the node's lab0, as linerate's own lab faults
# are sized (a bucket of 2 ms at the rate, at least 128 KiB; a queue of
# twice that). RATE 0 removes it.
cmd_shape() {
  setup_vars
  local n=${rest[0]:?shape NODE RATE} r=${rest[1]:?shape NODE RATE} bits burst
  local ns=lr-$name-$n
  [ -e "/run/netns/$ns" ] || die "no node $n (no namespace $ns)"
  if [ "$r" = 0 ]; then
    nsenter --net="/run/netns/$ns" tc qdisc del dev lab0 root 2>/dev/null || true
    return 0
  fi
  case $r in
  *gbit) bits=$(awk -v r="${r%gbit}" 'BEGIN{printf "%d", r * 1e9}') ;;
  *mbit) bits=$(awk -v r="${r%mbit}" 'BEGIN{printf "%d", r * 1e6}') ;;
  *) die "rate $r: say 1gbit, 500mbit…" ;;
  esac
  burst=$(awk -v b="$bits" 'BEGIN{b = b / 8 * 0.002; if (b < 131072) b = 131072; printf "%d", b}')
  nsenter --net="/run/netns/$ns" tc qdisc replace dev lab0 root handle 1: tbf rate "$r" burst "$burst" limit $((2 * burst))
}

# stop_pid NAME: SIGTERM, up to 30 s, then SIGKILL.
stop_pid() {
  local f=$W/pids/$1 p i
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill "$p" 2>/dev/null; then
    for ((i = 0; i < 60; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}

# pids_in_mntns NS: every process in mount namespace NS (a node's own:
# only what the node started lives there).
pids_in_mntns() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
  done
  return 0
}

cmd_down() {
  need_root
  setup_vars
  [ -d "$W" ] || { say "no cluster $name"; return 0; }
  local n d mnt cg h i p
  if alive kube-apiserver; then
    # Let the kubelets stop their pods while they still run.
    kc delete ds,job --all --all-namespaces --wait=true --timeout=60s >/dev/null 2>&1 || true
  fi
  for d in "$W"/h[0-9][0-9]; do
    [ -d "$d" ] || continue
    n=$(basename "$d")
    stop_pid "kubelet-$n"
    if [ -S "$d/containerd.sock" ] && alive "containerd-$n"; then
      for t in $(ctr -a "$d/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
        ctr -a "$d/containerd.sock" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true
      done
    fi
    stop_pid "containerd-$n"
    # Shims and whatever else is left in the node's mount namespace.
    if [ -f "$d/mntns" ]; then
      mnt=$(cat "$d/mntns")
      for ((i = 0; i < 40; i++)); do
        p=$(pids_in_mntns "$mnt")
        [ -n "$p" ] || break
        # shellcheck disable=SC2086 # one pid per word
        if [ $i -ge 10 ]; then kill -9 $p; else kill $p; fi 2>/dev/null || true
        sleep 0.5
      done
    fi
    if [ -f "$d/cgroup" ]; then
      cg=$(cat "$d/cgroup")
      for h in /sys/fs/cgroup/*/; do
        [ -d "$h$cg" ] && find "$h$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
      done
    fi
  done
  for p in coredns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$p"; done
  # kubelet's and the pod network's netfilter tables and chains (KUBE-*,
  # CNI-*) and bridge in each node's namespace, when the lab stays.
  if [ ! -f "$W/lab-made" ]; then
    for d in "$W"/h[0-9][0-9]; do
      [ -e "/run/netns/lr-$name-$(basename "$d")" ] || continue
      nsenter --net="/run/netns/lr-$name-$(basename "$d")" sh -c '
        ip link del cni0 2>/dev/null
        nft list tables | grep -vxF -f "$0" | while read -r _ family table; do nft delete table "$family" "$table"; done
        for t in iptables ip6tables; do $t-save | grep -v -e "KUBE-" -e "CNI-" | $t-restore; done' "$d/nft-tables" 2>/dev/null || true
    done
  fi
  if [ -f "$W/lab-made" ]; then
    "$W/linerate" lab down --name "$name" >&2 || true
  fi
  if [ -f "$W/made-dirs" ]; then
    while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$W/made-dirs"
  fi
  local left
  left=$(leftovers)
  rm -rf "$W"
  rmdir "$(dirname "$W")" 2>/dev/null || true
  [ -z "$left" ] || die "cluster $name down, but left behind:$left"
  say "cluster $name down: no process, namespace, mount, cgroup or iptables rule of it left"
}

# leftovers names what down should have removed and did not.
leftovers() {
  local d p h cg
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" != $$ ] && grep -qF "$W/" "$p/cmdline" 2>/dev/null && echo -n " process ${p#/proc/} ($(tr '\0' ' ' <"$p/cmdline" | cut -c1-60))"
  done
  for d in "$W"/h[0-9][0-9]; do
    [ -d "$d" ] || continue
    [ -f "$d/mntns" ] && [ -n "$(pids_in_mntns "$(cat "$d/mntns")")" ] && echo -n " processes in $(basename "$d")'s mount namespace"
    if [ -f "$d/cgroup" ]; then
      cg=$(cat "$d/cgroup")
      for h in /sys/fs/cgroup/*/; do [ -d "$h$cg" ] && echo -n " cgroup $h$cg"; done
    fi
    [ -e "/run/netns/lr-$name-$(basename "$d")" ] || continue
    if [ -f "$W/lab-made" ]; then
      echo -n " namespace lr-$name-$(basename "$d")"
    elif nsenter --net="/run/netns/lr-$name-$(basename "$d")" nft list ruleset 2>/dev/null | grep -qE "KUBE-|CNI-" ||
      [ -n "$(nsenter --net="/run/netns/lr-$name-$(basename "$d")" nft list tables | grep -vxF -f "$d/nft-tables")" ]; then
      echo -n " netfilter tables or rules in lr-$name-$(basename "$d")"
    fi
  done
  [ -f "$W/lab-made" ] && [ -e "/run/netns/$sw" ] && echo -n " namespace $sw"
  grep -qF " $W/" /proc/mounts && echo -n " mounts under $W"
  for d in /run/containerd /var/lib/kubelet /var/log/containers /etc/linerate; do
    grep -qxF "$d" "$W/made-dirs" 2>/dev/null && [ -e "$d" ] && echo -n " $d"
  done
  return 0
}

# verify_fleet FILE SLOW prints the matrix of the linerate.fleet/v1
# document FILE and checks that it names the nodes by their agents'
# hostnames, blames SLOW on its send side, and blames no other host.
verify_fleet() {
  python3 - "$1" "$2" "$nodes" <<'PY'
import json, sys
doc, slow, n = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
names = sorted(h["name"] for h in doc["hosts"])
want = ["h%02d" % i for i in range(1, n + 1)]
assert names == want, "hosts %s, want the nodes %s (named by their agents' hostnames)" % (names, want)
g = {}
for p in doc["pairs"]:
    g[p["a"], p["b"]], g[p["b"], p["a"]] = p["a_to_b_gbps"], p["b_to_a_gbps"]
print("Gbit/s, row sends to column:\n     " + "".join("%8s" % h for h in names))
for a in names:
    print("%5s" % a + "".join("%8s" % ("-" if a == b else "%.2f" % g[a, b] if g.get((a, b)) is not None else "x") for b in names))
hosts = [o for o in doc["outliers"] if o["kind"] == "host"]
blamed = sorted("%s %s" % (o["name"], o["direction"]) for o in hosts)
assert any(o["name"] == slow and o["direction"] in ("send", "both") for o in hosts), "%s not blamed on its send side: %s" % (slow, blamed)
assert all(o["name"] == slow for o in hosts), "other hosts blamed: %s" % blamed
print("k8s-lab: %s: blamed %s; median %.2f Gbit/s, %d pairs, %.0f s" % (sys.argv[1], ", ".join(blamed), doc["median_gbps"], len(doc["pairs"]), doc["wall_s"]))
PY
}

# check: deploy/kubernetes/README.md's fleet run against this cluster, with
# one node's sending side shaped to 1 Gbit/s, twice: `linerate fleet run
# --k8s` at the controller's seat, then the shipped fleet Job. Each matrix
# must blame that node (its send side) and no other host. Brings the
# cluster up and takes it down again unless it was up already
# (K8S_KEEP=1 keeps it). K8S_CHECK_RATE (1gbit) and K8S_CHECK_TIME (5s, the
# seat's tests) change the fault and the test length.
cmd_check() {
  need_root
  setup_vars
  local slow t0 rc=0 i st
  if ! alive kube-apiserver; then
    [ -n "${K8S_KEEP:-}" ] || trap 'cmd_down' EXIT
    cmd_up
  fi
  slow=$(node_name 2)
  rest=("$slow" "${K8S_CHECK_RATE:-1gbit}")
  cmd_shape
  mkdir -p "$W/check"
  say "linerate fleet run --k8s linerate-agents.linerate at the seat, $slow's lab0 at ${K8S_CHECK_RATE:-1gbit}"
  t0=$(date +%s)
  seat env LINERATE_STATE_DIR="$W/check" linerate fleet run --k8s linerate-agents.linerate \
    --token-file "$W/fleet-secret" --db "$W/check/results.db" -t "${K8S_CHECK_TIME:-5s}" --parallel --json \
    >"$W/check/fleet.json" || rc=$?
  [ "$rc" = 1 ] || die "fleet run exited $rc, not 1 (an outlier): see $W/check/fleet.json"
  verify_fleet "$W/check/fleet.json" "$slow"
  say "fleet run: $(($(date +%s) - t0)) s"

  say "the shipped fleet Job (deploy/kubernetes/fleet-job.yaml), $slow's lab0 at ${K8S_CHECK_RATE:-1gbit}"
  t0=$(date +%s)
  kc -n linerate delete job linerate-fleet --ignore-not-found --wait=true >/dev/null
  rewrite_manifest "$repo/deploy/kubernetes/fleet-job.yaml" | kc apply -f - >/dev/null
  st=
  for ((i = 0; i < 600; i++)); do
    st=$(kc -n linerate get job linerate-fleet -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    [[ $st =~ Complete|Failed ]] && break
    sleep 1
  done
  kc -n linerate logs job/linerate-fleet >"$W/check/job.json"
  [[ $st =~ Failed ]] && st="Failed (exit status 1: an outlier, or an error)"
  say "fleet Job: $st, in $(($(date +%s) - t0)) s"
  rest=("$slow" 0)
  cmd_shape
  verify_fleet "$W/check/job.json" "$slow"
  say "check passed"
}

case ${1:-} in
build) need_go && cmd_build ;;
up | down | status | kubectl | exec | shape | check)
  cmd=$1
  shift
  rest=()
  parse_opts "$@"
  case $cmd in up | check) need_go ;; esac
  case $cmd in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kubectl) setup_vars && kc "${rest[@]}" ;;
  exec) setup_vars && seat "${rest[@]}" ;;
  shape) cmd_shape ;;
  check) cmd_check ;;
  esac
  ;;
*) die "usage: $0 build|up|down|status|kubectl|exec|shape|check [--nodes N] [--name NAME] [--manifest FILE]" ;;
esac
