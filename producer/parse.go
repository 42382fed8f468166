package producer

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseBootstrapServers reads a bootstrap server list, host:port[,host:port...], as in
// $KAFKA_BOOTSTRAP_SERVERS and in the BootstrapServers of Lambda's Kafka events. Spaces around
// entries are dropped; an empty entry, a missing or invalid port, or an empty host is an error
// that names the entry.
func ParseBootstrapServers(s string) ([]string, error) {
	return checkBrokers(strings.Split(s, ","), "")
}

func checkBrokers(addrs []string, setting string) ([]string, error) {
	wrap := func(err error) error {
		if setting == "" {
			return err
		}
		return invalidCause(setting, err)
	}
	if len(addrs) == 0 {
		return nil, wrap(errors.New("no bootstrap servers"))
	}
	out := make([]string, 0, len(addrs))
	for i, a := range addrs {
		a = strings.TrimSpace(a)
		if err := checkBroker(a); err != nil {
			return nil, wrap(fmt.Errorf("broker %d %q: %w", i+1, a, err))
		}
		out = append(out, a)
	}
	return out, nil
}

func checkBroker(a string) error {
	if a == "" {
		return errors.New("empty")
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" {
		return errors.New("empty host")
	}
	if strings.ContainsAny(host, " \t\r\n/") {
		return errors.New("host has a space or slash")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || strings.HasPrefix(port, "+") {
		return fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return nil
}

// RegionFromBroker returns the AWS region in an Amazon MSK broker address, host[:port]:
// b-1.name.id.c2.kafka.<region>.amazonaws.com (provisioned),
// boot-id.c1.kafka-serverless.<region>.amazonaws.com (serverless), and the same under
// amazonaws.com.cn. ok is false for other hosts (self-managed, local, IP addresses).
func RegionFromBroker(addr string) (region string, ok bool) {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	labels := strings.Split(host, ".")
	n := len(labels)
	// ... kafka[-serverless] . <region> . amazonaws . com [. cn]
	end := n
	if n > 0 && labels[n-1] == "cn" {
		end--
	}
	if end < 4 || labels[end-1] != "com" || labels[end-2] != "amazonaws" {
		return "", false
	}
	if svc := labels[end-4]; svc != "kafka" && svc != "kafka-serverless" {
		return "", false
	}
	region = labels[end-3]
	if checkRegion(region) != nil {
		return "", false
	}
	return region, true
}

// checkRegion accepts AWS region names: lower-case letters, digits and hyphens, starting with
// a letter and ending with a digit, with at least two hyphens (us-east-1, us-gov-west-1).
func checkRegion(r string) error {
	if r == "" {
		return errors.New("empty region")
	}
	if len(r) > 32 || strings.Count(r, "-") < 2 || r[0] < 'a' || r[0] > 'z' || r[len(r)-1] < '0' || r[len(r)-1] > '9' {
		return fmt.Errorf("region %q: want a name like us-east-1", r)
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("region %q: want a name like us-east-1", r)
		}
		if c == '-' && r[i-1] == '-' {
			return fmt.Errorf("region %q: want a name like us-east-1", r)
		}
	}
	return nil
}

// pickRegion: WithRegion, else the brokers' host names (which must agree), else $AWS_REGION.
func pickRegion(option string, brokers []string, env string) (string, error) {
	if option != "" {
		return option, nil
	}
	var found, from string
	for _, b := range brokers {
		r, ok := RegionFromBroker(b)
		if !ok {
			continue
		}
		if found != "" && r != found {
			return "", invalid("bootstrap servers", fmt.Sprintf("%s is in %s but %s is in %s: set WithRegion", b, r, from, found))
		}
		found, from = r, b
	}
	if found != "" {
		return found, nil
	}
	if env == "" {
		return "", invalid("WithRegion", "MSK IAM needs a region: use WithRegion, MSK broker host names (…kafka.<region>.amazonaws.com) or set "+EnvRegion)
	}
	if err := checkRegion(env); err != nil {
		return "", invalidCause(EnvRegion, err)
	}
	return env, nil
}
