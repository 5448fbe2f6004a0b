package install

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/cfn"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
)

// Resource is the installer as a CloudFormation custom resource
// (Custom::JoistInstall). Its properties are Params by their Go names:
// Cluster, Region, LeaseNamespace, ForwarderImage, EventBus, CRDs
// ("true" to create the Karpenter CRDs the cluster lacks) and
// DefaultSpread ("true" when the functions plan with default spread
// constraints: their roles get the reads).
type Resource struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	Log     *slog.Logger
}

// Handle answers one request. Create applies; Update applies the new
// objects, then deletes the old ones the new set lacks; Delete removes
// what the properties install. A Delete whose properties cannot be read
// (a Create that failed on them) has nothing to remove and succeeds, so
// a rollback is never stuck on it.
func (r *Resource) Handle(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
	next, perr := objectsOf(ev.ResourceProperties)
	id := ev.PhysicalResourceID
	if p, err := paramsOf(ev.ResourceProperties); err == nil {
		id = "joist-install-" + p.Cluster
	}
	log := r.Log.With("requestType", string(ev.RequestType), "physicalId", id)
	switch ev.RequestType {
	case cfn.RequestCreate, cfn.RequestUpdate:
		if perr != nil {
			return id, nil, perr
		}
		if p, _ := paramsOf(ev.ResourceProperties); p.CRDs {
			created, err := EnsureCRDs(ctx, r.Dynamic)
			if err != nil {
				return id, nil, err
			}
			if len(created) > 0 {
				log.Info("created CRDs", "crds", created)
				// The mapper learned the API before these existed.
				if m, ok := r.Mapper.(interface{ Reset() }); ok {
					m.Reset()
				}
			}
		}
		if err := Apply(ctx, r.Dynamic, r.Mapper, next); err != nil {
			return id, nil, err
		}
		if ev.RequestType == cfn.RequestUpdate {
			if old, err := objectsOf(ev.OldResourceProperties); err == nil {
				if err := Prune(ctx, r.Dynamic, r.Mapper, old, next); err != nil {
					return id, nil, err
				}
			}
		}
		log.Info("installed", "objects", len(next))
		return id, map[string]any{"Objects": len(next)}, nil
	case cfn.RequestDelete:
		if perr != nil {
			log.Warn("delete: properties unreadable; nothing was installed from them", "error", perr.Error())
			return id, nil, nil
		}
		if err := Remove(ctx, r.Dynamic, r.Mapper, next); err != nil {
			return id, nil, err
		}
		log.Info("removed", "objects", len(next))
		return id, nil, nil
	}
	return id, nil, fmt.Errorf("install: unknown request type %q", ev.RequestType)
}

func objectsOf(props map[string]any) ([]runtime.Object, error) {
	p, err := paramsOf(props)
	if err != nil {
		return nil, err
	}
	return Objects(p)
}

// paramsOf reads Params from a request's properties; every value must be
// a string (CloudFormation passes them so).
func paramsOf(props map[string]any) (Params, error) {
	var p Params
	var installCRDs, defaultSpread string
	fields := map[string]*string{
		"Cluster": &p.Cluster, "Region": &p.Region, "LeaseNamespace": &p.LeaseNamespace,
		"ForwarderImage": &p.ForwarderImage, "EventBus": &p.EventBus, "CRDs": &installCRDs,
		"DefaultSpread": &defaultSpread,
	}
	for k, v := range props {
		dst, ok := fields[k]
		if !ok {
			continue // ServiceToken and anything CloudFormation adds
		}
		s, ok := v.(string)
		if !ok {
			return Params{}, fmt.Errorf("install: property %s is %T, want a string", k, v)
		}
		*dst = s
	}
	switch installCRDs {
	case "", "false":
	case "true":
		p.CRDs = true
	default:
		return Params{}, fmt.Errorf("install: property CRDs is %q, want \"true\" or \"false\"", installCRDs)
	}
	switch defaultSpread {
	case "", "false":
	case "true":
		p.DefaultSpread = true
	default:
		return Params{}, fmt.Errorf("install: property DefaultSpread is %q, want \"true\" or \"false\"", defaultSpread)
	}
	return p, p.Validate()
}
