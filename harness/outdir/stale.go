package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// historyFile is the name of a scenario's history in its directory,
// DIR/NAME/history.jsonl.gz (and, for a run of local shards, under
// DIR/NAME/shards/).
const historyFile = "history.jsonl.gz"

// Stale lists, sorted, the names of the subdirectories of dir that hold a
// history (historyFile at any depth) and are not named in ran, the
// scenarios this run wrote a directory for: directories an earlier run into
// the same --out left, which this run's summary and report do not describe.
// It neither moves nor removes anything. A dir that does not exist holds
// none; other errors are those of reading dir and its subdirectories.
func Stale(dir string, ran []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	var stale []string
	for _, e := range entries {
		if !e.IsDir() || slices.Contains(ran, e.Name()) {
			continue
		}
		held, err := holdsHistory(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("output directory: %w", err)
		}
		if held {
			stale = append(stale, e.Name())
		}
	}
	return stale, nil // os.ReadDir sorts by name
}

// errFound ends the walk of holdsHistory at the first history.
var errFound = errors.New("found")

func holdsHistory(dir string) (bool, error) {
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == historyFile {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}
