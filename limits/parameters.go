package limits

// MaxSSMParameterValueBytes is the largest value of an SSM Parameter Store parameter: 8 KB
// (8,192 bytes) for an advanced-tier parameter; a standard-tier one holds at most 4 KB. See
// https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
// and https://docs.aws.amazon.com/general/latest/gr/ssm.html
const MaxSSMParameterValueBytes = 8 << 10

// MaxSSMParameterNameBytes is the longest name of an SSM parameter, its path included: 1,011
// characters (2,048 for the fully qualified ARN). See
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html
// and https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-su-create.html
const MaxSSMParameterNameBytes = 2048

// MaxSSMParameterPathDepth is the deepest parameter hierarchy SSM accepts: 15 levels. See
// https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-hierarchies.html
const MaxSSMParameterPathDepth = 15

// MaxSSMGetParametersByPathResults is the most parameters one GetParametersByPath page returns:
// 10 (its MaxResults). See
// https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParametersByPath.html
const MaxSSMGetParametersByPathResults = 10

// MaxSecretsManagerSecretBytes is the largest value of a Secrets Manager secret, its
// SecretString or its SecretBinary: 65,536 bytes. See
// https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html
const MaxSecretsManagerSecretBytes = 64 << 10

// MaxSecretsManagerSecretIDBytes is the longest SecretId GetSecretValue takes, a name or an ARN:
// 2,048 characters. See
// https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html
const MaxSecretsManagerSecretIDBytes = 2048

// MaxAppConfigConfigurationBytes is the largest configuration the AppConfig hosted
// configuration store keeps: 2 MB (the default quota). See
// https://docs.aws.amazon.com/general/latest/gr/appconfig.html
const MaxAppConfigConfigurationBytes = 2 << 20
