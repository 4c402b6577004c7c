// compose-check validates docker-compose.yml as `docker compose config` does (compose-go: the
// Compose Specification's schema, interpolation, references between services, volumes and
// networks), without Docker:
//
//	go run ./containers/compose-check [-env-file FILE] docker-compose.yml
//
// With no env file, the variables the file requires are set to placeholders, so the check
// covers the file itself rather than one machine's .env.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	envFile := flag.String("env-file", "", "a .env file to interpolate with (default: placeholders)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-check [-env-file FILE] docker-compose.yml")
		os.Exit(2)
	}
	file := flag.Arg(0)
	opts := []cli.ProjectOptionsFn{cli.WithName("ccbench"), cli.WithWorkingDirectory(filepath.Dir(file))}
	if *envFile != "" {
		opts = append(opts, cli.WithEnvFiles(*envFile), cli.WithDotEnv)
	} else {
		opts = append(opts, cli.WithEnv(placeholders(file)))
	}
	options, err := cli.NewProjectOptions([]string{file}, opts...)
	if err == nil {
		var project interface{ ServiceNames() []string }
		project, err = options.LoadProject(context.Background())
		if err == nil {
			fmt.Printf("%s: valid (%d services: %v)\n", file, len(project.ServiceNames()), project.ServiceNames())
			return
		}
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
	os.Exit(1)
}

// placeholders gives every ${NAME:?...} variable of the file a value.
func placeholders(file string) []string {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var env []string
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):\?`).FindAllStringSubmatch(string(text), -1) {
		env = append(env, m[1]+"=placeholder")
	}
	return env
}
