// Package kafkaconn is how klt connects to a Kafka cluster: the flags of "klt produce" and
// "klt consume" (ClusterFlags: brokers, TLS, SASL/SCRAM, Amazon MSK IAM, timeouts), the
// franz-go client they make (NewClient), and the diagnosis of a cluster that cannot be reached
// or refuses the credentials (ConnWatch, CheckTopic), so an error says which.
package kafkaconn
