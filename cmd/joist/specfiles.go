package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/joist-dev/joist/pkg/specs"
)

// readSpecFiles decodes every file named, and every .yaml, .yml and .json
// file in the folders named ("-" is standard input). Folders are read one
// level deep unless recursive is set, as kubectl -f does.
func readSpecFiles(paths []string, recursive bool, stdin io.Reader) ([]specs.Object, []error) {
	var (
		objs     []specs.Object
		problems []error
	)
	if len(paths) == 0 {
		return nil, []error{errors.New("no input: give -f FILE or -f DIR (or -f - for standard input)")}
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				problems = append(problems, fmt.Errorf("reading standard input: %w", err))
				continue
			}
			o, err := specs.Decode(data, "<stdin>")
			objs = append(objs, o...)
			if err != nil {
				problems = append(problems, err)
			}
			continue
		}
		files, err := expand(p, recursive)
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
			o, err := specs.Decode(data, f)
			objs = append(objs, o...)
			if err != nil {
				problems = append(problems, err)
			}
		}
	}
	return objs, problems
}

func expand(p string, recursive bool) ([]string, error) {
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

// problemLines turns decode and build errors into lines for a terminal.
func problemLines(problems []error) []string {
	var lines []string
	for _, p := range problems {
		var oe *specs.ObjectError
		if errors.As(p, &oe) {
			lines = append(lines, oe.Lines()...)
			continue
		}
		lines = append(lines, strings.Split(p.Error(), "\n")...)
	}
	return lines
}
