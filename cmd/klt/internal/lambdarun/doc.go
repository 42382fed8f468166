// Package lambdarun runs a function of a SAM template on this machine as Lambda does: it
// builds the function's bootstrap as sam build does (BuildBootstrap), starts the local servers
// of the tables, queues and topics it uses (StartLocal: dynalite, local-aws-sqs, kfake), makes
// its environment (FunctionEnv) and invokes it once under the Runtime Interface Emulator. It is
// the engine of "klt invoke", "klt env-vars" and "klt local".
package lambdarun
