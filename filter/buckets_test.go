package filter

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func bucketCfg(mode string, count, groupSize int) Config {
	c := DefaultConfig()
	c.BucketMode = mode
	c.BucketCount = count
	c.GroupSize = groupSize
	return c
}

func byName(bs []Bucket) map[string]Bucket {
	m := map[string]Bucket{}
	for _, b := range bs {
		m[b.Name] = b
	}
	return m
}

func names(bs []Bucket) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

// Four positional groups of 2 with values 3, 1, 2, 0. quantile with 6
// buckets → nb = min(6, 4) = 4, one group each in ascending order:
// bucket_1 = g3, bucket_2 = g1, bucket_3 = g2, bucket_4 = g0.
func TestSplitBucketsQuantile(t *testing.T) {
	rs := []float64{3, 3, 1, 1, 2, 2, 0, 0}
	bs, err := SplitBuckets(rs, nil, bucketCfg(BucketQuantile, 6, 2))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(bs); !reflect.DeepEqual(got, []string{"all", "bucket_1", "bucket_2", "bucket_3", "bucket_4"}) {
		t.Fatalf("names %v", got)
	}
	m := byName(bs)
	all := m["all"]
	if !reflect.DeepEqual(all.Rows, []int{0, 1, 2, 3, 4, 5, 6, 7}) || all.RewardStdMean != 1.5 ||
		!reflect.DeepEqual(all.RewardStdValues, []float64{3, 1, 2, 0}) || !reflect.DeepEqual(all.GroupIDs, []int{0, 1, 2, 3}) {
		t.Fatalf("all %+v", all)
	}
	want := map[string][]int{"bucket_1": {6, 7}, "bucket_2": {2, 3}, "bucket_3": {4, 5}, "bucket_4": {0, 1}}
	for name, rows := range want {
		if !reflect.DeepEqual(m[name].Rows, rows) {
			t.Errorf("%s rows %v want %v", name, m[name].Rows, rows)
		}
	}
	if !reflect.DeepEqual(m["bucket_1"].GroupIDs, []int{3}) {
		t.Errorf("bucket_1 ids %v", m["bucket_1"].GroupIDs)
	}

	// 3 buckets over 4 groups: 1, 1 and 1+remainder 1 → bucket_3 = g2, g0
	// (bucket order), rows in original order, mean (2+3)/2.
	bs, err = SplitBuckets(rs, nil, bucketCfg(BucketQuantile, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	b3 := byName(bs)["bucket_3"]
	if !reflect.DeepEqual(b3.Rows, []int{0, 1, 4, 5}) || !reflect.DeepEqual(b3.GroupIDs, []int{2, 0}) ||
		!reflect.DeepEqual(b3.RewardStdValues, []float64{2, 3}) || b3.RewardStdMean != 2.5 {
		t.Fatalf("bucket_3 %+v", b3)
	}
}

// Ties sort by group index: values 1, 1, 0 with 3 buckets → g2, g0, g1.
func TestSplitBucketsTies(t *testing.T) {
	bs, err := SplitBuckets([]float64{1, 1, 0}, nil, bucketCfg(BucketQuantile, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(bs)
	if !reflect.DeepEqual(m["bucket_1"].Rows, []int{2}) || !reflect.DeepEqual(m["bucket_2"].Rows, []int{0}) || !reflect.DeepEqual(m["bucket_3"].Rows, []int{1}) {
		t.Fatalf("%+v", bs)
	}
}

// fixed_rv with unsorted group ids: ids sorted 1, 4, 6, 9 with values 7,
// 1, 4.9, 0.5 (id 4 mixes row stds 1 and 1). bucket_1 [0,1) = id 9,
// bucket_2 [1,2) = id 4, bucket_5 [4,5) = id 6, bucket_6 [5,∞) = id 1;
// buckets 3 and 4 are empty and left out.
func TestSplitBucketsFixedRV(t *testing.T) {
	ids := []int{9, 4, 9, 4, 6, 1, 1}
	rs := []float64{0.5, 1, 0.5, 1, 4.9, 7, 7}
	bs, err := SplitBuckets(rs, ids, bucketCfg(BucketFixedRV, 6, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(bs); !reflect.DeepEqual(got, []string{"all", "bucket_1", "bucket_2", "bucket_5", "bucket_6"}) {
		t.Fatalf("names %v", got)
	}
	m := byName(bs)
	all := m["all"]
	if !reflect.DeepEqual(all.GroupIDs, []int{1, 4, 6, 9}) || math.Abs(all.RewardStdMean-3.35) > 1e-6 {
		t.Fatalf("all %+v", all)
	}
	checks := map[string][]int{"bucket_1": {0, 2}, "bucket_2": {1, 3}, "bucket_5": {4}, "bucket_6": {5, 6}}
	for name, rows := range checks {
		if !reflect.DeepEqual(m[name].Rows, rows) {
			t.Errorf("%s rows %v want %v", name, m[name].Rows, rows)
		}
	}
	if !reflect.DeepEqual(m["bucket_6"].GroupIDs, []int{1}) {
		t.Errorf("bucket_6 ids %v", m["bucket_6"].GroupIDs)
	}
}

// A group's value is the mean reward_std over its rows: (1+2)/2 = 1.5.
// NaN values fall in no fixed_rv bucket.
func TestSplitBucketsGroupMeanAndNaN(t *testing.T) {
	bs, err := SplitBuckets([]float64{1, 2, math.NaN(), math.NaN()}, []int{0, 0, 1, 1}, bucketCfg(BucketFixedRV, 6, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(bs); !reflect.DeepEqual(got, []string{"all", "bucket_2"}) {
		t.Fatalf("names %v", got)
	}
	if v := byName(bs)["bucket_2"].RewardStdValues; !reflect.DeepEqual(v, []float64{1.5}) {
		t.Fatalf("values %v", v)
	}
}

func TestSplitBucketsErrors(t *testing.T) {
	if _, err := SplitBuckets([]float64{1, 2, 3, 4, 5}, nil, bucketCfg(BucketQuantile, 6, 2)); err == nil ||
		!strings.Contains(err.Error(), "Batch size (5) must be divisible by group_size (2) for bucketization.") {
		t.Fatalf("err %v", err)
	}
	if _, err := SplitBuckets([]float64{1}, []int{1, 2}, bucketCfg(BucketQuantile, 6, 2)); err == nil {
		t.Fatal("want length error")
	}
	if _, err := SplitBuckets([]float64{1}, nil, bucketCfg("decile", 6, 1)); err == nil || !strings.Contains(err.Error(), "valid: quantile, fixed_rv") {
		t.Fatalf("err %v", err)
	}
	// An empty batch gives no bucket, not an error.
	bs, err := SplitBuckets(nil, []int{}, bucketCfg(BucketQuantile, 6, 2))
	if err != nil || len(bs) != 0 {
		t.Fatalf("%v %v", bs, err)
	}
}

func TestWriteBucketTableGolden(t *testing.T) {
	bs, err := SplitBuckets([]float64{3, 3, 1, 1, 2, 2, 0, 0}, nil, bucketCfg(BucketQuantile, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBucketTable(&buf, bs, 8); err != nil {
		t.Fatal(err)
	}
	if err := WriteBucketTable(&buf, nil, 0); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "bucket_table.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("table differs from %s:\n%s", golden, buf.String())
	}
}

// Python formats a NaN mean with f"{x:>12.4f}" as "nan" (Go's %f would
// write NaN): two positional groups of 2 with row stds NaN and 1 → all =
// mean(NaN, 1) = NaN; quantile over min(6, 2) buckets: bucket_1 = group 1
// (1.0), bucket_2 = group 0 (NaN sorts last).
func TestWriteBucketTableNaN(t *testing.T) {
	bs, err := SplitBuckets([]float64{math.NaN(), math.NaN(), 1, 1}, nil, bucketCfg(BucketQuantile, 6, 2))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBucketTable(&buf, bs, 4); err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("-", 80)
	want := "\n[Gradient Analysis] Bucket Distribution (Total Samples: 4)\n" + line + "\n" +
		"Bucket               | Count      | Percentage   | Avg Reward Std \n" + line + "\n" +
		"all                  | 4          |     100.00% |          nan\n" +
		"bucket_1             | 2          |      50.00% |       1.0000\n" +
		"bucket_2             | 2          |      50.00% |          nan\n" +
		line + "\n\n"
	if got := buf.String(); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
