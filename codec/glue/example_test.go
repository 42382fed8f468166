package glue_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	awsglue "github.com/aws/aws-sdk-go-v2/service/glue"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/glue"
)

// Avro values framed by the AWS Glue Schema Registry's serializers, their writer schemas read
// from Glue by the schema version UUID of each record's framing, once per UUID for the life
// of the execution environment.
func ExampleNewRegistry() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	type Reading struct {
		Sensor  string  `avro:"sensor"`
		Celsius float64 `avro:"celsius"`
	}
	readings, err := codec.Avro[Reading]()
	if err != nil {
		log.Fatal(err)
	}
	d, err := codec.NewDeserializer(codec.String(), readings,
		codec.WithValueWire(codec.WireGlue), codec.WithRegistry(glue.NewRegistry(awsglue.NewFromConfig(cfg))))
	if err != nil {
		log.Fatal(err)
	}
	_ = d // d.Func(handle) is the function's per-record function
}
