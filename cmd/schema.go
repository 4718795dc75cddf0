package cmd

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/schema"
)

// schemas are the JSON Schemas `pneuma schema` prints, by name.
var schemas = map[string][]byte{
	"jobs": schema.Jobs,
}

// NewCmdSchema builds `pneuma schema NAME`: it prints a JSON Schema for
// editors and validators (the same bytes as the committed schema/ file).
func NewCmdSchema(io *IO) *cobra.Command {
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	return &cobra.Command{
		Use:       "schema " + strings.Join(names, "|"),
		Short:     "Print the JSON Schema of a file pneuma reads (jobs: the jobs file)",
		Long:      "Print the JSON Schema of a file pneuma reads. jobs is the jobs file's schema, also committed as\nschema/jobs.schema.json; point an editor at it with the modeline\n\n  # yaml-language-server: $schema=https://raw.githubusercontent.com/pneuma-cli/pneuma/main/schema/jobs.schema.json",
		Example:   "  pneuma schema jobs > jobs.schema.json",
		ValidArgs: names,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &UsageError{Err: fmt.Errorf("schema takes one name (%s), got %d arguments", strings.Join(names, ", "), len(args)), Usage: c.UsageString()}
			}
			if _, ok := schemas[args[0]]; !ok {
				return &UsageError{Err: fmt.Errorf("no schema %q (there is: %s)", args[0], strings.Join(names, ", ")), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			_, err := io.Out.Write(schemas[args[0]])
			return err
		},
	}
}
