package funcrun

// LMIFlag is the flag of klt invoke and klt local that runs a function as a Lambda Managed
// Instances function; LMIFlagHelp ends its help.
const LMIFlag = "lmi-concurrency"

// LMIFlagHelp says what the flag does, for both commands.
const LMIFlagHelp = `A function whose template has
CapacityProviderConfig runs so without it: its PerExecutionEnvironmentMaxConcurrency, else 8
per vCPU of an environment (MemorySize over ExecutionEnvironmentMemoryGiBPerVCpu, default 2).
Each process gets AWS_LAMBDA_MAX_CONCURRENCY=N; a timeout fails the invocation
(Sandbox.Timedout) and the process goes on, as on LMI; see docs/local.md`
