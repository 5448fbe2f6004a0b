package crds

// idsRule checks the comma-separated aws-ids list with one regular
// expression: splitting it and matching each part costs more than the API
// server allows.
func idsRule(prefix string) string {
	id := prefix + "-[0-9a-z]+"
	return "!('aws-ids' in self) || self['aws-ids'].matches('^[\\\\s,]*" + id + "([\\\\s,]+" + id + ")*[\\\\s,]*$')"
}

const nonEmptySelector = "self.all(k, k != '' && self[k] != '')"

func awsNodeTemplateEdits() map[string][]edit {
	lt := func(field, path string) edit {
		return cel("!has(self.launchTemplate) || !has(self."+path+")", "launchTemplate and "+field+" are mutually exclusive")
	}
	return map[string][]edit{
		"": {required("spec")},
		"spec": {
			required("subnetSelector"),
			cel("has(self.launchTemplate) || has(self.securityGroupSelector)", "securityGroupSelector is required unless launchTemplate is set"),
			lt("securityGroupSelector", "securityGroupSelector"),
			lt("metadataOptions", "metadataOptions"),
			lt("instanceProfile", "instanceProfile"),
			lt("blockDeviceMappings", "blockDeviceMappings"),
			lt("userData", "userData"),
			lt("amiSelector", "amiSelector"),
			cel("!has(self.amiFamily) || self.amiFamily != 'Custom' || has(self.amiSelector)", "amiFamily Custom needs an amiSelector"),
		},
		"spec.subnetSelector": {
			maxProperties(50),
			cel(nonEmptySelector, "empty selector keys and values are not supported"),
			cel(idsRule("subnet"), "aws-ids must be subnet ids (subnet-...)"),
		},
		"spec.securityGroupSelector": {
			maxProperties(50),
			cel(nonEmptySelector, "empty selector keys and values are not supported"),
			cel(idsRule("sg"), "aws-ids must be security group ids (sg-...)"),
		},
		"spec.amiSelector": {
			maxProperties(50),
			cel(nonEmptySelector, "empty selector keys and values are not supported"),
			cel(idsRule("ami"), "aws-ids must be AMI ids (ami-...)"),
		},
		"spec.tags":                                    {maxProperties(50), cel("self.all(k, k != '')", "empty tag keys are not supported")},
		"spec.amiFamily":                               {enum("AL2", "Bottlerocket", "Ubuntu", "Windows2019", "Windows2022", "Custom")},
		"spec.metadataOptions.httpEndpoint":            {enum("enabled", "disabled")},
		"spec.metadataOptions.httpProtocolIPv6":        {enum("enabled", "disabled")},
		"spec.metadataOptions.httpPutResponseHopLimit": {minimum(1), maximum(64)},
		"spec.metadataOptions.httpTokens":              {enum("required", "optional")},
		"spec.blockDeviceMappings":                     {maxItems(50)},
		"spec.blockDeviceMappings[]":                   {required("deviceName", "ebs")},
		"spec.blockDeviceMappings[].ebs":               {cel("has(self.volumeSize) || has(self.snapshotID)", "volumeSize or snapshotID is required")},
		"spec.blockDeviceMappings[].ebs.volumeType":    {enum(volumeTypes...)},
	}
}
