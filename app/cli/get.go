package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-dev/warden/app/api"
	"github.com/warden-dev/warden/app/client"
	"github.com/warden-dev/warden/app/resource"
)

type getOptions struct {
	allNamespaces bool
	selector      string
	output        string
	watch         bool
	// filters are --agent, --tool, --phase, --since (toolcalls.go).
	filters recordFilters
}

func newGetCmd(a *app) *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get KIND [NAME]",
		Short: "List resources of a kind, or show one",
		Long: `Get lists the resources of a kind (plural, singular or Kind name: agents, agent,
Agent) in a namespace, following continue tokens so that every page is shown.

With --watch it keeps printing changes as they happen until interrupted; each row
then starts with the event type (ADDED, MODIFIED, DELETED).`,
		Example: `  warden get agents
  warden get tools -l team=support -o wide
  warden get compiledagentmanifest support-bot-g1 -o yaml
  warden get agents -A --watch
  warden get toolcalls --agent support-bot --since 1h --phase Failed`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			k, err := lookupKind(args[0])
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
				if o.selector != "" || o.allNamespaces {
					return usagef("a NAME cannot be combined with --selector or --all-namespaces")
				}
			}
			if err := o.filters.check(k, name); err != nil {
				return err
			}
			return a.get(cmd.Context(), k, name, o)
		},
	}
	a.addNamespaceFlag(cmd)
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across every namespace")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. team=support,tier in (gold,silver)")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table, wide, json or yaml")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print changes as they happen")
	o.filters.addFlags(f)
	return cmd
}

func (a *app) get(ctx context.Context, k resource.KindInfo, name string, o getOptions) error {
	c, conn, err := a.connect()
	if err != nil {
		return err
	}
	ns := conn.Namespace
	allNS := o.allNamespaces && k.Namespaced

	var items []*resource.Object
	var listRV string
	if name != "" {
		obj, err := c.Get(ctx, k.Plural, ns, name)
		if err != nil {
			return err
		}
		items = []*resource.Object{obj}
		if !o.watch {
			switch o.output {
			case outJSON:
				return writeJSON(a.env.Stdout, obj)
			case outYAML:
				return writeYAML(a.env.Stdout, obj)
			}
		}
	} else {
		namespaces := []string{ns}
		if allNS {
			nsList, err := c.ListAll(ctx, "namespaces", "", client.ListOptions{})
			if err != nil {
				return fmt.Errorf("list namespaces: %w", err)
			}
			listRV = nsList.Metadata.ResourceVersion
			namespaces = namespaces[:0]
			for _, n := range nsList.Items {
				namespaces = append(namespaces, n.Metadata.Name)
			}
		}
		for i, n := range namespaces {
			l, err := o.filters.list(ctx, c, k, n, o.selector)
			if err != nil {
				return err
			}
			if i == 0 && listRV == "" {
				listRV = l.Metadata.ResourceVersion
			}
			items = append(items, l.Items...)
		}
		if !o.watch {
			switch o.output {
			case outJSON, outYAML:
				list := &api.List{APIVersion: k.APIVersion, Kind: k.Kind + "List", Items: items}
				list.Metadata.ResourceVersion = listRV
				if list.Items == nil {
					list.Items = []*resource.Object{}
				}
				if o.output == outJSON {
					return writeJSON(a.env.Stdout, list)
				}
				return writeYAML(a.env.Stdout, list)
			}
		}
	}

	cols := tableColumns(k.Kind, o.output == outWide, allNS, a.env.Now())
	if k.Kind == resource.KindToolCall {
		cols = toolCallColumns(o.output == outWide, allNS, a.env.Now())
	}
	t := &table{w: a.env.Stdout}
	if !o.watch {
		if len(items) == 0 {
			a.noResources(k, ns, allNS)
			return nil
		}
		rows := make([][]string, len(items))
		for i, it := range items {
			rows[i] = rowOf(cols, it)
		}
		t.print(headerOf(cols), rows)
		return nil
	}
	return a.watch(ctx, c, k, ns, name, allNS, listRV, items, cols, t, o)
}

func (a *app) noResources(k resource.KindInfo, ns string, allNS bool) {
	switch {
	case !k.Namespaced:
		fmt.Fprintf(a.env.Stderr, "No %s found.\n", k.Plural)
	case allNS:
		fmt.Fprintf(a.env.Stderr, "No %s found in any namespace.\n", k.Plural)
	default:
		fmt.Fprintf(a.env.Stderr, "No %s found in namespace %s.\n", k.Plural, ns)
	}
}

// watch prints the listed items as ADDED, then streams changes from the
// list's resourceVersion until the server ends the stream or ctx is done.
func (a *app) watch(ctx context.Context, c *client.Client, k resource.KindInfo, ns, name string, allNS bool,
	rv string, items []*resource.Object, cols []column, t *table, o getOptions) error {
	sel := []string{"kind=" + k.Kind}
	if k.Namespaced && !allNS {
		sel = append(sel, "namespace="+ns)
	}
	if name != "" {
		sel = append(sel, "name="+name)
	}
	if o.selector != "" {
		sel = append(sel, o.selector)
	}
	sel = append(sel, o.filters.selector()...)
	table := o.output == outTable || o.output == outWide
	emit := func(ev api.WatchEvent) error {
		switch o.output {
		case outJSON:
			return writeJSON(a.env.Stdout, ev)
		case outYAML:
			fmt.Fprintln(a.env.Stdout, "---")
			return writeYAML(a.env.Stdout, ev)
		}
		t.row(append([]string{ev.Type}, rowOf(cols, ev.Object)...))
		return nil
	}
	if table {
		rows := make([][]string, len(items))
		for i, it := range items {
			rows[i] = append([]string{api.EventAdded}, rowOf(cols, it)...)
		}
		t.min = []int{len(api.EventModified)}
		t.print(append([]string{"EVENT"}, headerOf(cols)...), rows)
	} else {
		for _, it := range items {
			if err := emit(api.WatchEvent{Type: api.EventAdded, Object: it}); err != nil {
				return err
			}
		}
	}
	events, err := c.Watch(ctx, strings.Join(sel, ","), rv)
	if err != nil {
		return err
	}
	for ev := range events {
		switch ev.Type {
		case api.EventError:
			return ev.Err
		case api.EventBookmark:
			continue
		}
		if ev.Object == nil {
			continue
		}
		if err := emit(ev); err != nil {
			return err
		}
	}
	return nil
}
