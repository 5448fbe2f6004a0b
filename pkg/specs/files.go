package specs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ReadFiles decodes every file named, and every .yaml, .yml and .json
// file in the folders named ("-" is standard input). Folders are read one
// level deep unless recursive is set, as kubectl -f does.
func ReadFiles(paths []string, recursive bool, stdin io.Reader) ([]Object, []error) {
	var (
		objs     []Object
		problems []error
	)
	if len(paths) == 0 {
		return nil, []error{errors.New("no input: give -f FILE or -f DIR (or -f - for standard input)")}
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				problems = append(problems, fmt.Errorf("read standard input: %w", err))
				continue
			}
			o, err := Decode(data, "<stdin>")
			objs = append(objs, o...)
			if err != nil {
				problems = append(problems, err)
			}
			continue
		}
		files, err := ListFiles(p, recursive)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			o, err := Decode(data, f)
			objs = append(objs, o...)
			if err != nil {
				problems = append(problems, err)
			}
		}
	}
	return objs, problems
}

// ListFiles is p itself when it is a file, else the .yaml, .yml and .json
// files in folder p (one level deep unless recursive), sorted; a folder
// with none is an error.
func ListFiles(p string, recursive bool) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s: no .yaml, .yml or .json files", p)
	}
	return files, err
}

// ProblemLines turns decode and build errors into lines for a terminal.
func ProblemLines(problems []error) []string {
	var lines []string
	for _, p := range problems {
		var oe *ObjectError
		if errors.As(p, &oe) {
			lines = append(lines, oe.Lines()...)
			continue
		}
		lines = append(lines, strings.Split(p.Error(), "\n")...)
	}
	return lines
}

// ParameterName is the SSM parameter that holds an object of a cluster's
// specs: where `joist specs push` and the stack's -c specs=DIR write it,
// and where the functions read it (pkg/specstore).
func ParameterName(cluster, kind, name string) string {
	return "/joist/" + cluster + "/" + strings.ToLower(kind) + "/" + name
}

// Document is the object as its parameter holds it: YAML.
func (o Object) Document() (string, error) {
	b, err := yaml.JSONToYAML(o.Raw)
	if err != nil {
		return "", fmt.Errorf("render %s %q: %w", o.Kind, o.Name, err)
	}
	return string(b), nil
}
