// Command genparquet writes problems.parquet (testdata of package
// deepcoder) from the first three rows of problems.jsonl, with parquet-go
// (a separate module so ragen does not depend on it). Run from this
// directory: go run . ../problems.jsonl ../problems.parquet
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
}
