package specstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/joist-dev/joist/pkg/specs"
)

// SSMAPI is the part of the SSM client the store uses.
type SSMAPI interface {
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, opts ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
	DeleteParameter(ctx context.Context, in *ssm.DeleteParameterInput, opts ...func(*ssm.Options)) (*ssm.DeleteParameterOutput, error)
}

// SSMStore keeps one spec object per SSM parameter under
// /joist/<cluster>/, at any depth (joist specs push writes
// /joist/<cluster>/<kind>/<name>). A parameter holds YAML or JSON (one
// object, or several documents), as String or SecureString.
type SSMStore struct {
	Client  SSMAPI
	Cluster string
	Logger  *slog.Logger
}

// Prefix is the parameter path the cluster's specs live under.
func Prefix(cluster string) string { return "/joist/" + cluster + "/" }

// ParameterName is where `joist specs push` stores an object.
func ParameterName(cluster, kind, name string) string {
	return specs.ParameterName(cluster, kind, name)
}

// Load reads every parameter under the prefix, following pagination, and
// decodes each. Parameters are read in name order, so errors and objects
// come out the same way every time.
func (s *SSMStore) Load(ctx context.Context) ([]specs.Object, []error, error) {
	params, err := s.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		objs     []specs.Object
		problems []error
	)
	for _, p := range params {
		o, err := specs.Decode([]byte(aws.ToString(p.Value)), aws.ToString(p.Name))
		objs = append(objs, o...)
		if err != nil {
			problems = append(problems, err)
		}
	}
	return objs, problems, nil
}

func (s *SSMStore) list(ctx context.Context) ([]ssmtypes.Parameter, error) {
	var params []ssmtypes.Parameter
	in := &ssm.GetParametersByPathInput{
		Path:           aws.String(strings.TrimSuffix(Prefix(s.Cluster), "/")),
		Recursive:      aws.Bool(true),
		WithDecryption: aws.Bool(true),
	}
	for {
		out, err := s.Client.GetParametersByPath(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read SSM parameters under %s: %w", Prefix(s.Cluster), err)
		}
		params = append(params, out.Parameters...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	sort.Slice(params, func(i, j int) bool { return aws.ToString(params[i].Name) < aws.ToString(params[j].Name) })
	return params, nil
}

// Report logs each problem; SSM has nowhere to attach it.
func (s *SSMStore) Report(_ context.Context, problems []error) {
	logProblems(s.logger(), "ssm:"+Prefix(s.Cluster), problems)
}

func (s *SSMStore) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// PushOptions tune Push.
type PushOptions struct {
	// Secure stores parameters as SecureString (with the account's
	// default key) instead of String.
	Secure bool
	// Prune deletes parameters under the prefix that the pushed set does
	// not hold.
	Prune bool
}

// Push writes each spec object (ignored objects are skipped) to its own
// parameter, overwriting, as YAML. The caller validates first: Push
// stores what it is given. It returns the names written and deleted.
func (s *SSMStore) Push(ctx context.Context, objs []specs.Object, opts PushOptions) (written, deleted []string, err error) {
	keep := map[string]bool{}
	for _, o := range objs {
		if o.Ignored {
			continue
		}
		name := ParameterName(s.Cluster, o.Kind, o.Name)
		if keep[name] {
			return written, nil, fmt.Errorf("%s %q is given twice", o.Kind, o.Name)
		}
		keep[name] = true
		body, err := o.Document()
		if err != nil {
			return written, nil, err
		}
		typ := ssmtypes.ParameterTypeString
		if opts.Secure {
			typ = ssmtypes.ParameterTypeSecureString
		}
		_, err = s.Client.PutParameter(ctx, &ssm.PutParameterInput{
			Name:      aws.String(name),
			Value:     aws.String(body),
			Type:      typ,
			Overwrite: aws.Bool(true),
			// Standard parameters hold 4 KB; larger specs go to the
			// advanced tier on their own.
			Tier:        ssmtypes.ParameterTierIntelligentTiering,
			Description: aws.String(fmt.Sprintf("Joist spec: %s %s", o.Kind, o.Name)),
		})
		if err != nil {
			return written, nil, fmt.Errorf("write %s: %w", name, err)
		}
		written = append(written, name)
	}
	if !opts.Prune {
		return written, nil, nil
	}
	params, err := s.list(ctx)
	if err != nil {
		return written, nil, err
	}
	for _, p := range params {
		name := aws.ToString(p.Name)
		if keep[name] {
			continue
		}
		if _, err := s.Client.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: p.Name}); err != nil {
			var nf *ssmtypes.ParameterNotFound
			if !errors.As(err, &nf) {
				return written, deleted, fmt.Errorf("delete %s: %w", name, err)
			}
		}
		deleted = append(deleted, name)
	}
	return written, deleted, nil
}
