package sokoban

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// Level is one level of a Boxoban file: its "; <id>" header and its rows.
type Level struct {
	ID   string
	Rows []string
}

// Room converts the level's rows into a Room (see ParseRoom for the cell
// characters).
func (l Level) Room() (Room, error) {
	r, err := ParseRoom(l.Rows)
	if err != nil {
		return Room{}, fmt.Errorf("level %s: %w", l.ID, err)
	}
	return r, nil
}

// maxLevelFileLine bounds a line of a level file.
const maxLevelFileLine = 1 << 16

// ParseLevels reads a level file in Boxoban format: each level starts with
// a "; <id>" line followed by its rows ('#' wall, ' ' floor, '.' target,
// '$' box, '*' box on target, '@' player, '+' player on target); blank
// lines separate levels; "\r\n" line ends are accepted. Every level must
// parse into a valid room (equal row lengths, one player, as many boxes as
// targets); errors name the line.
func ParseLevels(r io.Reader) ([]Level, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLevelFileLine)
	var levels []Level
	var cur *Level
	start := 0
	finish := func() error {
		if cur == nil {
			return nil
		}
		if len(cur.Rows) == 0 {
			return fmt.Errorf("sokoban: level file line %d: level %q has no rows", start, cur.ID)
		}
		if _, err := cur.Room(); err != nil {
			return fmt.Errorf("sokoban: level file line %d: %w", start, err)
		}
		levels = append(levels, *cur)
		cur = nil
		return nil
	}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(text, ";"):
			if err := finish(); err != nil {
				return nil, err
			}
			cur = &Level{ID: strings.TrimSpace(text[1:])}
			start = line
		case strings.TrimSpace(text) == "":
			if err := finish(); err != nil {
				return nil, err
			}
		default:
			if cur == nil {
				return nil, fmt.Errorf("sokoban: level file line %d: row outside a level (missing \"; <id>\" header)", line)
			}
			cur.Rows = append(cur.Rows, text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sokoban: level file line %d: %w", line+1, err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("sokoban: level file has no levels")
	}
	return levels, nil
}

// LoadLevels reads a Boxoban level file from disk.
func LoadLevels(path string) ([]Level, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sokoban: %w", err)
	}
	ls, err := ParseLevels(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ls, nil
}
