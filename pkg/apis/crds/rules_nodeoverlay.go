package crds

// nodeOverlayEdits are the NodeOverlay CRD's rules (sigs.k8s.io/karpenter
// v1.15 pkg/apis/v1alpha1/nodeoverlay.go).
func nodeOverlayEdits() map[string][]edit {
	return map[string][]edit{
		"": {required("spec")},
		"spec": {
			cel("!has(self.price) || !has(self.priceAdjustment)", "cannot set both 'price' and 'priceAdjustment'"),
		},
		"spec.requirements": {
			maxItems(100),
			cel("self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)", "requirements with operator 'NotIn' must have a value defined"),
			cel("self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)", "requirements with operator 'In' must have a value defined"),
			cel("self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)", "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"),
		},
		"spec.requirements[]":          {required("key", "operator")},
		"spec.requirements[].key":      {maxLength(316), pattern(qualifiedNamePattern)},
		"spec.requirements[].operator": {enum("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")},
		"spec.requirements[].values":   {maxItems(1000), listType("atomic")},
		"spec.requirements[].values[]": {maxLength(63), pattern(labelValuePattern)},
		"spec.priceAdjustment":         {pattern(`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`)},
		"spec.price":                   {pattern(`^\d+(\.\d+)?$`)},
		"spec.capacity":                {cel("self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))", "invalid resource restricted")},
		"spec.weight":                  {minimum(1), maximum(10000)},
	}
}
