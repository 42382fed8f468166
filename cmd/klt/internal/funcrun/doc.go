// Package funcrun runs a function of a SAM template on this machine as Lambda does: it
// builds the function's bootstrap as sam build does for its Metadata.BuildMethod
// (BuildBootstrap) and the Runtime Interface Emulator (BuildEmulator), starts the local
// servers of the tables, queues and topics it uses (StartServers: dynalite, local-aws-sqs;
// StartKafka: kfake, whose address becomes the value of the template's Kafka broker
// parameters; CreateTopics), makes its environment (Vars, FunctionEnv) and invokes it once
// under the emulator. It is the engine of "klt invoke", "klt env-vars" and "klt local", and
// works from any directory: nothing in it needs the toolkit's checkout.
package funcrun
