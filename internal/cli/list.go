package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/workload"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every workload (operations, data models, options) and every adapter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, "WORKLOADS")
			for _, wl := range workload.Registered() {
				m := wl.Meta()
				fmt.Fprintf(w, "\n  %s — %s\n", m.Name, m.Description)
				fmt.Fprintf(w, "    operations: %s\n", strings.Join(m.Operations, ", "))
				if len(m.Models) > 0 {
					fmt.Fprintf(w, "    data models: %s\n", strings.Join(m.Models, ", "))
				}
				fmt.Fprintln(w, "    options:")
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				if j, err := job.New(m.Name); err == nil {
					for _, o := range j.Opts().List() {
						fmt.Fprintf(tw, "      --%s\t(default %s)\t%s\t%s\n", o.Name, showDefault(o.Default), strings.Join(o.Verbs, ", "), o.Help)
					}
				}
				tw.Flush()
			}
			fmt.Fprintln(w, "\nADAPTERS")
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  NAME\tDSN\tFAMILIES\tDESCRIPTION")
			for _, a := range adapter.Registered() {
				schemes := make([]string, len(a.Schemes()))
				for i, s := range a.Schemes() {
					schemes[i] = s + "://..."
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name(), strings.Join(schemes, " "), strings.Join(a.Families(), ", "), a.Describe())
			}
			return tw.Flush()
		},
	}
}

// showDefault writes an empty default visibly.
func showDefault(d string) string {
	if d == "" {
		return "none"
	}
	return d
}
