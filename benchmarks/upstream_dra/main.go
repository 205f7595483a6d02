// Command dra-bench times Kubernetes' structured DRA allocator placing a stream of claims on a
// cluster, node by node as kube-scheduler's DRA filter asks it, and prints one JSON line.
//
// The scenario is the JSON that benchmarks/dra_cluster.py --write-scenario writes: the node
// names in scan order, the DeviceClasses, the ResourceSlices and the ResourceClaims (resource.k8s.io/v1).
// Each claim is offered to the nodes in order until the allocator returns an allocation there
// (first fit: the least work a per-node filter can do); the devices it got count as allocated for
// the claims after it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

type scenario struct {
	Nodes   []string                     `json:"nodes"`
	Classes []*resourceapi.DeviceClass   `json:"classes"`
	Slices  []*resourceapi.ResourceSlice `json:"slices"`
	Claims  []*resourceapi.ResourceClaim `json:"claims"`
}

type classes map[string]*resourceapi.DeviceClass

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, class := range c {
		out = append(out, class)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := c[name]; ok {
		return class, nil
	}
	return nil, fmt.Errorf("device class %q not found", name)
}

type report struct {
	Allocator     string  `json:"allocator"`
	Slices        string  `json:"slices"`
	Nodes         int     `json:"nodes"`
	Claims        int     `json:"claims"`
	Placed        int     `json:"placed"`
	Seconds       float64 `json:"seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	ClaimsPerS    float64 `json:"claims_per_s"`
	Devices       int     `json:"devices_allocated"`
	AllocateCalls int     `json:"allocate_calls"`
	MicrosPerCall float64 `json:"us_per_allocate"`
}

// cpuSeconds is the process's user and system time so far (every thread, the collector's too).
func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dra-bench: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	path := flag.String("scenario", "", "scenario JSON written by benchmarks/dra_cluster.py --write-scenario")
	limit := flag.Int("claims", 0, "place only the first N claims (0: all)")
	sliceMode := flag.String("slices", "all", `"all": each claim's allocator sees every slice, as kube-scheduler builds it; "node": an allocator per node over that node's slices`)
	flag.Parse()
	if *path == "" {
		fail("-scenario is required")
	}
	if *sliceMode != "all" && *sliceMode != "node" {
		fail("-slices must be all or node, got %q", *sliceMode)
	}
	raw, err := os.ReadFile(*path)
	if err != nil {
		fail("%v", err)
	}
	var sc scenario
	if err := json.Unmarshal(raw, &sc); err != nil {
		fail("%s: %v", *path, err)
	}
	claims := sc.Claims
	if *limit > 0 && *limit < len(claims) {
		claims = claims[:*limit]
	}
	lister := classes{}
	for _, class := range sc.Classes {
		lister[class.Name] = class
	}
	nodes := make([]*v1.Node, len(sc.Nodes))
	nodeSlices := make([][]*resourceapi.ResourceSlice, len(sc.Nodes))
	index := map[string]int{}
	for i, name := range sc.Nodes {
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		index[name] = i
	}
	for _, slice := range sc.Slices {
		if slice.Spec.NodeName == nil {
			fail("slice %s: the benchmark expects node-local slices (spec.nodeName)", slice.Name)
		}
		i, ok := index[*slice.Spec.NodeName]
		if !ok {
			fail("slice %s: node %q is not in the scenario's nodes", slice.Name, *slice.Spec.NodeName)
		}
		nodeSlices[i] = append(nodeSlices[i], slice)
	}

	ctx := context.Background()
	features := structured.Features{} // the scenario uses no optional feature: the stable allocator
	celCache := cel.NewCache(10, cel.Features{})
	allocated := sets.New[structured.DeviceID]()
	state := structured.AllocatedState{AllocatedDevices: allocated}
	newAllocator := func(slices []*resourceapi.ResourceSlice) structured.Allocator {
		a, err := structured.NewAllocator(ctx, features, state, lister, slices, celCache)
		if err != nil {
			fail("%v", err)
		}
		return a
	}

	placed, calls := 0, 0
	start, startCPU := time.Now(), cpuSeconds()
	for _, claim := range claims {
		var shared structured.Allocator
		if *sliceMode == "all" {
			shared = newAllocator(sc.Slices) // kube-scheduler's PreFilter: one allocator per pod
		}
		for i, node := range nodes {
			a := shared
			if a == nil {
				a = newAllocator(nodeSlices[i])
			}
			calls++
			results, err := a.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if err != nil {
				fail("claim %s/%s on %s: %v", claim.Namespace, claim.Name, node.Name, err)
			}
			if results == nil {
				continue
			}
			for _, r := range results[0].Devices.Results {
				allocated.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
			}
			placed++
			break
		}
	}
	elapsed, cpu := time.Since(start).Seconds(), cpuSeconds()-startCPU
	out := report{
		Allocator: "k8s.io/dynamic-resource-allocation/structured (stable)", Slices: *sliceMode,
		Nodes: len(nodes), Claims: len(claims), Placed: placed, Seconds: elapsed, CPUSeconds: cpu,
		ClaimsPerS: float64(len(claims)) / elapsed, Devices: allocated.Len(), AllocateCalls: calls,
		MicrosPerCall: elapsed * 1e6 / float64(max(calls, 1)),
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}
