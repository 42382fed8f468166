// Command protogen compiles .proto files with github.com/bufbuild/protocompile and writes their Go
// code with protoc-gen-go's own generator, in the current directory or -dir (paths=source_relative):
// protoc-gen-go without protoc.
//
//	cd tools && GOWORK=off go run ./protogen -dir ../codec/internal/testpb test.proto
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bufbuild/protocompile"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/pluginpb"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// -dir: where the .proto files are and the .pb.go files go (go:generate runs this
	// from the tools module, whose directory is not the package's).
	if len(args) > 2 && args[0] == "-dir" {
		if err := os.Chdir(args[1]); err != nil {
			return err
		}
		args = args[2:]
	}
	files := args
	if len(files) == 0 {
		return errors.New("usage: protogen [-dir DIR] FILE.proto [FILE.proto]")
	}
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(context.Background(), files...)
	if err != nil {
		return err
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		Parameter:      proto.String("paths=source_relative"),
	}
	seen := map[string]bool{}
	for _, f := range compiled {
		// Dependencies first, as protoc sends them.
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			dep := imports.Get(i).FileDescriptor
			if !seen[dep.Path()] {
				seen[dep.Path()] = true
				req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(dep))
			}
		}
		if !seen[f.Path()] {
			seen[f.Path()] = true
			req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(f))
		}
	}
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return err
	}
	for _, f := range plugin.Files {
		if f.Generate {
			gengo.GenerateFile(plugin, f)
		}
	}
	resp := plugin.Response()
	if resp.Error != nil {
		return fmt.Errorf("%s", resp.GetError())
	}
	for _, out := range resp.File {
		if err := os.WriteFile(filepath.Clean(out.GetName()), []byte(out.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
