package launch

import (
	"github.com/joist-dev/joist/pkg/model"
)

// tags go on the instance, its volumes and the fleet.
func (l *Launcher) tags(pool *model.Pool, nc *model.NodeClass) map[string]string {
	t := l.templateTags(nc)
	t[TagNodePool] = pool.Name
	t[TagSpecHash] = model.SpecHash(pool, nc)
	t["Name"] = "joist/" + l.Cluster.Name + "/" + pool.Name
	return t
}

// templateTags go on launch templates: the node class's tags and the
// cluster's (which IAM conditions and listings key on).
func (l *Launcher) templateTags(nc *model.NodeClass) map[string]string {
	t := map[string]string{}
	for k, v := range nc.Tags {
		t[k] = v
	}
	t[TagCluster] = l.Cluster.Name
	t[TagNodeClass] = nc.Name
	t["kubernetes.io/cluster/"+l.Cluster.Name] = "owned"
	return t
}
