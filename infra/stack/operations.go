package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// MetricsNamespace is the CloudWatch namespace of Joist's EMF metrics
// (pkg/metrics.Namespace).
const MetricsNamespace = "Joist"

// defineOperations adds what an operator watches: alarms on every DLQ's
// depth, every function's errors and throttles, pods that stay
// unschedulable and an interruption queue falling behind, sent to an SNS
// topic (the stack's own, or -c alarmTopicArn); and a dashboard of the
// functions' metrics.
func (s *JoistStack) defineOperations() {
	c := s.Config
	var topic awssns.ITopic
	if c.AlarmTopicArn != "" {
		topic = awssns.Topic_FromTopicArn(s.Stack, jsii.String("AlarmTopic"), jsii.String(c.AlarmTopicArn))
	} else {
		t := awssns.NewTopic(s.Stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Joist alarms of " + c.ClusterName),
			EnforceSSL:  jsii.Bool(true),
		})
		topic = t
	}
	s.AlarmTopic = topic
	action := awscloudwatchactions.NewSnsAction(topic)
	alarm := func(id, what string, m awscloudwatch.IMetric, threshold, periods float64, op awscloudwatch.ComparisonOperator) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("Joist (" + c.ClusterName + "): " + what),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			ComparisonOperator: op,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		s.Alarms = append(s.Alarms, a)
	}
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	for _, q := range []struct {
		id  string
		dlq awssqs.Queue
	}{{"Pending", s.PendingDLQ}, {"Ready", s.ReadyDLQ}, {"Interruption", s.InterruptionDLQ}} {
		alarm(q.id+"DeadLettersAlarm", "messages in the "+q.id+" dead-letter queue: a batch failed every retry; read it and redrive",
			q.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
			0, 1, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)
	}
	five := awscdk.Duration_Minutes(jsii.Number(5))
	for _, spec := range fnSpecs {
		fn := s.Functions[spec.name]
		alarm(spec.id+"ErrorsAlarm", "the "+spec.name+" function failed (its logs say why)",
			fn.MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			0, 1, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)
		alarm(spec.id+"ThrottlesAlarm", "the "+spec.name+" function was throttled",
			fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			0, 1, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)
	}
	alarm("UnschedulablePodsAlarm", "pods no pool can serve for 15 minutes (the provisioner's FailedProvisioning events name them)",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricsNamespace), MetricName: jsii.String("joist_pods_unschedulable"), Period: minute, Statistic: jsii.String("Minimum")}),
		0, 15, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)
	alarm("InterruptionBacklogAlarm", "interruption messages wait over a minute: spot warnings are two minutes",
		s.InterruptionQueue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
		60, 2, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)

	search := func(label, metric, stat string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("SEARCH('Namespace=\"" + MetricsNamespace + "\" MetricName=\"" + metric + "\"', '" + stat + "', 60)"),
			Label:      jsii.String(label), Period: minute,
		})
	}
	graph := func(title string, ms ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &ms, Width: jsii.Number(12)})
	}
	var errs, throttles []awscloudwatch.IMetric
	for _, spec := range fnSpecs {
		errs = append(errs, s.Functions[spec.name].MetricErrors(&awscloudwatch.MetricOptions{Label: jsii.String(spec.name)}))
		throttles = append(throttles, s.Functions[spec.name].MetricThrottles(&awscloudwatch.MetricOptions{Label: jsii.String(spec.name)}))
	}
	d := awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{})
	d.AddWidgets(
		graph("Pending and unschedulable pods", search("pending", "joist_pending_pods", "Maximum"), search("unschedulable", "joist_pods_unschedulable", "Maximum")),
		graph("Nodes launched (by pool, type)", search("created", "joist_nodes_created_total", "Sum")),
	)
	// The pools' running cost: the pool series only (the gauge also rolls
	// up to the cluster's dimension set, where pools' values mix).
	perPool := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("SEARCH('{" + MetricsNamespace + ",cluster,pool} MetricName=\"joist_nodepools_cost_per_hour\"', 'Maximum', 60)"),
		Label:      jsii.String("$/h"), Period: minute,
	})
	d.AddWidgets(
		graph("Cost now per pool ($/h)", perPool),
		graph("Nodes now per pool", awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("SEARCH('{" + MetricsNamespace + ",cluster,pool} MetricName=\"joist_nodepools_nodes\"', 'Maximum', 60)"),
			Label:      jsii.String("nodes"), Period: minute,
		})),
	)
	d.AddWidgets(
		graph("$/h launched per pool", search("$/h", "joist_nodepools_launched_price_per_hour", "Sum")),
		graph("Scheduling time (s)", search("p50", "joist_scheduler_scheduling_duration_seconds", "p50"), search("max", "joist_scheduler_scheduling_duration_seconds", "Maximum")),
	)
	d.AddWidgets(
		graph("Disruption (nodes by reason, $/h saved)", search("disrupted", "joist_nodeclaims_disrupted_total", "Sum"), search("saved $/h", "joist_disruption_savings_dollars_per_hour", "Sum")),
		graph("Interruption messages (by kind)", search("received", "joist_interruption_received_messages_total", "Sum")),
	)
	d.AddWidgets(graph("Function errors", errs...), graph("Function throttles", throttles...))
}
