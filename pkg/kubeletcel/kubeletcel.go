// Package kubeletcel evaluates kubelet settings given as CEL expressions
// per instance type ("vcpus * 8" for maxPods, "max(60, vcpus * 30)" for
// kubeReserved.cpu), as Karpenter v1.15 does behind its NodeClassCEL
// feature gate: the same variables and functions, the same units and
// rounding of the results, so a node class carried over sizes and boots
// its nodes alike.
package kubeletcel

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	corev1 "k8s.io/api/core/v1"
)

// Vars are what an expression may read of an instance type.
type Vars struct {
	VCPUs        int64  // vcpus
	MemoryMiB    int64  // memory_mib: EC2's figure
	DefaultENIs  int64  // default_enis: the default network card's
	IPsPerENI    int64  // ips_per_eni: IPv4 addresses per ENI
	MaxPods      int64  // max_pods: the family's default for maxPods, the resolved maxPods for the reservations
	InstanceType string // instance_type
}

func (v Vars) activation() map[string]any {
	return map[string]any{
		"vcpus": v.VCPUs, "memory_mib": v.MemoryMiB, "default_enis": v.DefaultENIs,
		"ips_per_eni": v.IPsPerENI, "max_pods": v.MaxPods, "instance_type": v.InstanceType,
	}
}

// env is the expressions' environment: the variables and min and max of
// ints, doubles and one of each.
var env = sync.OnceValues(func() (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.Variable("vcpus", cel.IntType), cel.Variable("memory_mib", cel.IntType),
		cel.Variable("default_enis", cel.IntType), cel.Variable("ips_per_eni", cel.IntType),
		cel.Variable("max_pods", cel.IntType), cel.Variable("instance_type", cel.StringType),
	}
	for _, f := range []struct {
		name string
		pick func(a, b float64) bool // whether a is kept over b
	}{{"max", func(a, b float64) bool { return a > b }}, {"min", func(a, b float64) bool { return a < b }}} {
		num := func(v ref.Val) float64 {
			if i, ok := v.(types.Int); ok {
				return float64(i)
			}
			return float64(v.(types.Double))
		}
		pick := func(a, b ref.Val) ref.Val {
			if f.pick(num(a), num(b)) {
				return a
			}
			return b
		}
		dbl := func(v ref.Val) ref.Val {
			if i, ok := v.(types.Int); ok {
				return types.Double(i)
			}
			return v
		}
		opts = append(opts, cel.Function(f.name,
			cel.Overload(f.name+"_int_int", []*cel.Type{cel.IntType, cel.IntType}, cel.IntType, cel.BinaryBinding(pick)),
			cel.Overload(f.name+"_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(pick)),
			cel.Overload(f.name+"_int_double", []*cel.Type{cel.IntType, cel.DoubleType}, cel.DoubleType,
				cel.BinaryBinding(func(a, b ref.Val) ref.Val { return pick(dbl(a), b) })),
			cel.Overload(f.name+"_double_int", []*cel.Type{cel.DoubleType, cel.IntType}, cel.DoubleType,
				cel.BinaryBinding(func(a, b ref.Val) ref.Val { return pick(a, dbl(b)) })),
		))
	}
	return cel.NewEnv(opts...)
})

// programs are the compiled expressions by their text: a node class's few
// expressions are evaluated for every instance type of the catalog.
var programs sync.Map // string -> cel.Program

// Compile checks an expression: it must parse, read only the variables,
// and give an int or a double.
func Compile(expr string) error {
	_, err := program(expr)
	return err
}

func program(expr string) (cel.Program, error) {
	if p, ok := programs.Load(expr); ok {
		return p.(cel.Program), nil
	}
	e, err := env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		// CEL's message draws a caret under the expression on more
		// lines; its first line says it all in one.
		msg, _, _ := strings.Cut(iss.Err().Error(), "\n")
		msg = strings.TrimSuffix(strings.TrimPrefix(msg, "ERROR: <input>:"), " (in container '')")
		return nil, fmt.Errorf("expression %q: at %s", expr, msg)
	}
	if t := ast.OutputType(); t != cel.IntType && t != cel.DoubleType {
		return nil, fmt.Errorf("expression %q gives %s, want an int or a double", expr, t)
	}
	p, err := e.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", expr, err)
	}
	programs.Store(expr, p)
	return p, nil
}

// Eval evaluates an expression for an instance type: a double is
// truncated toward zero, and one that is not finite is an error.
func Eval(expr string, v Vars) (int64, error) {
	p, err := program(expr)
	if err != nil {
		return 0, err
	}
	out, _, err := p.Eval(v.activation())
	if err != nil {
		return 0, fmt.Errorf("expression %q for %s: %w", expr, v.InstanceType, err)
	}
	switch x := out.Value().(type) {
	case int64:
		return x, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("expression %q for %s gives %v", expr, v.InstanceType, x)
		}
		return int64(x), nil
	}
	return 0, fmt.Errorf("expression %q for %s gives a %T", expr, v.InstanceType, out.Value())
}

// MaxPods evaluates a maxPods expression: a result outside 0 to 2^31-1 is
// an error (Karpenter then offers the type no pods).
func MaxPods(expr string, v Vars) (int32, error) {
	n, err := Eval(expr, v)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("expression %q for %s gives %d pods, outside 0 to %d", expr, v.InstanceType, n, math.MaxInt32)
	}
	return int32(n), nil
}

// Reserved evaluates a kubeReserved or systemReserved expression for the
// resource it reserves, as a quantity in the unit the expression is
// written in: cpu in millicores rounded up to 10m, memory in MiB rounded
// up to 16Mi, ephemeral-storage in GiB, pid as a count. A negative result
// is an error (Karpenter then leaves the entry out).
func Reserved(resource, expr string, v Vars) (string, error) {
	n, err := Eval(expr, v)
	if err != nil {
		return "", err
	}
	if n < 0 {
		return "", fmt.Errorf("expression %q for %s gives %d, below 0", expr, v.InstanceType, n)
	}
	switch corev1.ResourceName(resource) {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%dm", roundUp(n, 10)), nil
	case corev1.ResourceMemory:
		return fmt.Sprintf("%dMi", roundUp(n, 16)), nil
	case corev1.ResourceEphemeralStorage:
		return fmt.Sprintf("%dGi", n), nil
	}
	return fmt.Sprint(n), nil
}

// roundUp rounds n up to a multiple of step, leaving it when that would
// overflow.
func roundUp(n, step int64) int64 {
	if n%step == 0 || n > math.MaxInt64-step {
		return n
	}
	return (n/step + 1) * step
}
