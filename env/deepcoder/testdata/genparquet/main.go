// Command genparquet writes the parquet test files of the external-service
// envs with parquet-go (a separate module so ragen does not depend on it):
// problems.parquet (package deepcoder) from the first three rows of
// problems.jsonl, and with -all also ../../../search/testdata/questions.parquet
// (a list-of-strings ground_truth column) and
// ../../../lean/testdata/theorems.parquet. Run from this directory:
//
//	go run . ../problems.jsonl ../problems.parquet -all
package main

import (
	"bufio"
	"encoding/json"
	"log"
	"os"

	"github.com/parquet-go/parquet-go"
)

type row struct {
	Question    string  `parquet:"question,dict"`
	GroundTruth string  `parquet:"ground_truth,dict"`
	StarterCode string  `parquet:"starter_code,dict"`
	Metadata    *string `parquet:"metadata,optional,dict"`
}

func text(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

func main() {
	in, err := os.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var rows []row
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && len(rows) < 3 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			log.Fatal(err)
		}
		md := text(m["metadata"])
		r := row{Question: text(m["question"]), GroundTruth: text(m["ground_truth"]), StarterCode: text(m["starter_code"]), Metadata: &md}
		if len(rows) == 0 {
			r.Metadata = nil // a null metadata cell
		}
		rows = append(rows, r)
	}
	if err := parquet.WriteFile(os.Args[2], rows, parquet.Compression(&parquet.Snappy)); err != nil {
		log.Fatal(err)
	}
	if len(os.Args) > 3 && os.Args[3] == "-all" {
		type question struct {
			Question    string   `parquet:"question,dict"`
			GroundTruth []string `parquet:"ground_truth,list"`
		}
		qs := []question{
			{"Which city is the capital of Austria?", []string{"Vienna"}},
			{"Who founded Debian?", []string{"Ian Murdock", "Murdock"}},
			{"Is Ganymede larger than Mercury?", []string{"yes"}},
		}
		if err := parquet.WriteFile("../../../search/testdata/questions.parquet", qs); err != nil {
			log.Fatal(err)
		}
		type theorem struct {
			FormalStatement   string `parquet:"formal_statement,dict"`
			InformalStatement string `parquet:"informal_statement,dict"`
		}
		ts := []theorem{
			{"theorem two_add_two : (2 : ℕ) + 2 = 4 := by sorry", "Two plus two is four."},
			{"import Mathlib\n\ntheorem and_swap (p q : Prop) (hp : p) (hq : q) : q ∧ p := by\n", ""},
		}
		if err := parquet.WriteFile("../../../lean/testdata/theorems.parquet", ts, parquet.Compression(&parquet.Snappy)); err != nil {
			log.Fatal(err)
		}
	}
}
