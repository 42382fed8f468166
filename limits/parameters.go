package limits

// SSMParameterValueBytes is the largest value of an SSM Parameter Store parameter: 8 KB
// (8,192 bytes) for an advanced-tier parameter; a standard-tier one holds at most 4 KB. See
// https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
// and https://docs.aws.amazon.com/general/latest/gr/ssm.html
const SSMParameterValueBytes = 8 << 10

// SSMParameterNameBytes is the longest name of an SSM parameter, its path included: 1,011
// characters (2,048 for the fully qualified ARN). See
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
// and https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-su-create.html
const SSMParameterNameBytes = 2048

// SSMParameterPathDepth is the deepest parameter hierarchy SSM accepts: 15 levels. See
// https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-hierarchies.html
const SSMParameterPathDepth = 15

// SSMGetParametersByPathResults is the most parameters one GetParametersByPath page returns:
// 10 (its MaxResults). See
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParametersByPath.html
const SSMGetParametersByPathResults = 10

// SecretsManagerSecretBytes is the largest value of a Secrets Manager secret, its
// SecretString or its SecretBinary: 65,536 bytes. See
// https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html
const SecretsManagerSecretBytes = 64 << 10

// SecretsManagerSecretIDBytes is the longest SecretId GetSecretValue takes, a name or an ARN:
// 2,048 characters. See
// https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html
const SecretsManagerSecretIDBytes = 2048

// AppConfigConfigurationBytes is the largest configuration the AppConfig hosted
// configuration store keeps: 2 MB (the default quota). See
// https://docs.aws.amazon.com/general/latest/gr/appconfig.html
const AppConfigConfigurationBytes = 2 << 20
