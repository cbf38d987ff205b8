package fleet

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Resolver looks up the addresses of a DNS name; *net.Resolver is one.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// K8sHosts finds the agents behind a Kubernetes headless Service (one A
// or AAAA record per ready agent pod; with hostNetwork, the node
// addresses) through r. service is the Service's DNS name: "NAME" in the
// pod's own namespace, "NAME.NAMESPACE", or a full name. DNS rather than
// the API's EndpointSlices: it needs no API token and no RBAC, and works
// from any pod. The hosts are named by their addresses, in address order.
func K8sHosts(ctx context.Context, r Resolver, service string) ([]Host, error) {
	if _, err := netip.ParseAddr(service); err == nil || checkAddress(service) != nil {
		return nil, fmt.Errorf("--k8s %q: give the headless Service's DNS name (NAME, NAME.NAMESPACE or NAME.NAMESPACE.svc.cluster.local)", service)
	}
	addrs, err := r.LookupHost(ctx, service)
	if err != nil {
		return nil, fmt.Errorf("looking up the agents of Service %s: %w (is the Service headless and are its agents ready?)", service, err)
	}
	var ips []netip.Addr
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("the Service %s: %q is not an address", service, a)
		}
		ips = append(ips, ip.Unmap())
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	ips = slices.Compact(ips)
	if len(ips) < 2 {
		return nil, fmt.Errorf("the Service %s has %s: a fleet needs at least 2 (kubectl get pods -l app.kubernetes.io/component=agent)", service, count(len(ips), "ready agent"))
	}
	if len(ips) > maxHosts {
		return nil, fmt.Errorf("the Service %s has %d agents: at most %d", service, len(ips), maxHosts)
	}
	hosts := make([]Host, 0, len(ips))
	for _, ip := range ips {
		s := ip.String()
		hosts = append(hosts, Host{Name: strings.ReplaceAll(strings.ReplaceAll(s, ":", "-"), "%", "-"), Address: s})
	}
	return hosts, nil
}
