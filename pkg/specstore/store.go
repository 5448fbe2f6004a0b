// Package specstore reads Joist's spec objects (Provisioners,
// AWSNodeTemplates, NodePools, EC2NodeClasses) from where a cluster keeps
// them: SSM parameters under /joist/<cluster>/, or the objects of the
// Karpenter CRDs in the cluster. It is an adapter: it fetches and reports,
// and leaves decoding, defaulting and validation to pkg/specs.
package specstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/specs"
)

// Store is a source of spec objects.
type Store interface {
	// Load returns every spec object the store holds. problems are
	// documents that could not be read (bad YAML, unknown kinds), each
	// naming where it came from; they are skipped, not fatal. err is set
	// only when the store itself could not be read.
	Load(ctx context.Context) (objs []specs.Object, problems []error, err error)
	// Report tells the owners of bad objects what is wrong with them
	// (a log line, and for CRD objects a Kubernetes Event on the object).
	Report(ctx context.Context, problems []error)
}

// Sources a Store can be built for, and the environment variable that
// picks one (SPEC_SOURCE=ssm|crd; ssm when unset).
const (
	SourceSSM = "ssm"
	SourceCRD = "crd"
	EnvSource = "SPEC_SOURCE"
)

// Read loads the store, builds the model, reports every problem, and
// returns the pools and node classes that are valid. Only a store that
// cannot be read at all is an error: one bad object never hides the
// others.
func Read(ctx context.Context, s Store) (*model.Spec, error) {
	objs, problems, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	spec, errs := specs.Build(objs)
	// A document that could not be decoded may have been a pool's: until
	// it reads again, no pool counts as deleted.
	spec.Partial = len(problems) > 0
	for _, err := range errs {
		var oe *specs.ObjectError
		if !errors.As(err, &oe) || oe.Name == "" {
			spec.Partial = true
		}
	}
	problems = append(problems, errs...)
	if len(problems) > 0 {
		s.Report(ctx, problems)
	}
	return spec, nil
}

// Withdrawn is the spec of a cluster Joist is being removed from: no pool,
// and none declared, so every Joist node counts as of a deleted pool.
func Withdrawn() *model.Spec {
	return &model.Spec{Pools: []*model.Pool{}, NodeClasses: map[string]*model.NodeClass{}, Declared: map[string]bool{}}
}

// Config chooses and wires a store. Source is "ssm" (the default) or
// "crd", typically from $SPEC_SOURCE.
type Config struct {
	Source  string
	Cluster string
	// SSM is needed for the ssm source.
	SSM SSMAPI
	// Kube is needed for the crd source (a dynamic client).
	Kube KubeAPI
	// Events, for the crd source, receives Events on bad objects.
	Events typedcorev1.EventsGetter
	// Logger receives problem reports; slog.Default() when nil.
	Logger *slog.Logger
}

// New builds the store Config names.
func New(c Config) (Store, error) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	switch c.Source {
	case "", SourceSSM:
		if c.SSM == nil {
			return nil, errors.New("spec source ssm needs an SSM client")
		}
		if c.Cluster == "" {
			return nil, errors.New("spec source ssm needs the cluster name")
		}
		return &SSMStore{Client: c.SSM, Cluster: c.Cluster, Logger: log}, nil
	case SourceCRD:
		if c.Kube == nil {
			return nil, errors.New("spec source crd needs a Kubernetes client")
		}
		return &CRDStore{Client: c.Kube, Events: c.Events, Logger: log}, nil
	default:
		return nil, fmt.Errorf("unknown spec source %q: want %q or %q", c.Source, SourceSSM, SourceCRD)
	}
}

// logProblems writes one log line per problem line.
func logProblems(log *slog.Logger, source string, problems []error) {
	for _, p := range problems {
		var oe *specs.ObjectError
		if errors.As(p, &oe) {
			for _, line := range oe.Lines() {
				log.Warn("invalid spec object skipped", "source", source, "error", line)
			}
			continue
		}
		log.Warn("unreadable spec document skipped", "source", source, "error", p.Error())
	}
}
