package pyrand

import (
	"math"
	"reflect"
	"testing"
)

// Reference values for Random come from CPython 3.11's random module:
//
//	r = random.Random(s)
//	r.random(), r.getrandbits(7), r.randrange(10), r.randint(1, 5),
//	r.getrandbits(40), r.sample(range(100), 8), r.sample(range(10), 3)
//	l = list(range(10)); r.shuffle(l); r.uniform(2, 5); r.getrandbits(64)
//
// The first two random() values are the spec's check values (RNG appendix).
func TestRandomMatchesCPython(t *testing.T) {
	tests := []struct {
		seed     int64
		random   float64
		bits7    uint64
		below10  int
		randint  int
		bits40   uint64
		sample8  []int
		sample3  []int
		shuffled []int
		uniform  float64
		bits64   uint64
	}{
		{0, 0.8444218515250481, 97, 6, 1, 1061968961082, []int{65, 62, 51, 38, 61, 45, 74, 27}, []int{8, 2, 4}, []int{9, 0, 3, 8, 6, 5, 7, 4, 1, 2}, 4.189495244780386, 15688473010146788380},
		{42, 0.6394267984578837, 3, 4, 2, 151282538206, []int{94, 13, 86, 69, 11, 75, 54, 4}, []int{0, 1, 3}, []int{2, 5, 7, 9, 6, 1, 4, 0, 8, 3}, 3.767797051627726, 16035760590688802187},
		{1, 0.13436424411240122, 108, 1, 3, 541672336265, []int{97, 57, 60, 83, 48, 26, 12, 62}, []int{0, 6, 8}, []int{6, 3, 4, 8, 1, 5, 2, 7, 0, 9}, 2.066966333063972, 9987297454309550045},
		{4294967301, 0.15727238718789782, 36, 9, 1, 688719765053, []int{21, 99, 84, 63, 93, 45, 96, 31}, []int{5, 3, 2}, []int{8, 9, 1, 5, 0, 4, 3, 2, 7, 6}, 4.080534606205674, 17123045676985143883},
		{-7, 0.32383276483316237, 19, 6, 1, 902254243635, []int{68, 12, 46, 74, 7, 64, 27, 4}, []int{1, 6, 8}, []int{7, 2, 5, 6, 0, 8, 4, 9, 3, 1}, 3.731308845852496, 914761360679426580},
		{123456789, 0.6414006161858726, 69, 9, 4, 1030740611082, []int{38, 88, 59, 50, 68, 44, 51, 56}, []int{8, 3, 0}, []int{7, 6, 3, 8, 1, 9, 5, 0, 2, 4}, 3.7740766399442114, 17443274402796988644},
	}
	for _, tc := range tests {
		r := NewRandom(tc.seed)
		if got := r.Random(); got != tc.random {
			t.Errorf("seed %d: random() = %v, want %v", tc.seed, got, tc.random)
		}
		if got := r.GetRandBits(7); got != tc.bits7 {
			t.Errorf("seed %d: getrandbits(7) = %v, want %v", tc.seed, got, tc.bits7)
		}
		if got := r.RandRange(0, 10); got != tc.below10 {
			t.Errorf("seed %d: randrange(10) = %v, want %v", tc.seed, got, tc.below10)
		}
		if got := r.RandInt(1, 5); got != tc.randint {
			t.Errorf("seed %d: randint(1,5) = %v, want %v", tc.seed, got, tc.randint)
		}
		if got := r.GetRandBits(40); got != tc.bits40 {
			t.Errorf("seed %d: getrandbits(40) = %v, want %v", tc.seed, got, tc.bits40)
		}
		s8, err := r.Sample(100, 8)
		if err != nil || !reflect.DeepEqual(s8, tc.sample8) {
			t.Errorf("seed %d: sample(range(100), 8) = %v (%v), want %v", tc.seed, s8, err, tc.sample8)
		}
		s3, err := r.Sample(10, 3)
		if err != nil || !reflect.DeepEqual(s3, tc.sample3) {
			t.Errorf("seed %d: sample(range(10), 3) = %v (%v), want %v", tc.seed, s3, err, tc.sample3)
		}
		l := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		ShuffleSlice(r, l)
		if !reflect.DeepEqual(l, tc.shuffled) {
			t.Errorf("seed %d: shuffle = %v, want %v", tc.seed, l, tc.shuffled)
		}
		if got := r.Uniform(2, 5); got != tc.uniform {
			t.Errorf("seed %d: uniform(2,5) = %v, want %v", tc.seed, got, tc.uniform)
		}
		if got := r.GetRandBits(64); got != tc.bits64 {
			t.Errorf("seed %d: getrandbits(64) = %v, want %v", tc.seed, got, tc.bits64)
		}
	}
}

func TestRandomSampleErrors(t *testing.T) {
	r := NewRandom(0)
	if _, err := r.Sample(3, 4); err == nil {
		t.Error("Sample(3, 4): want error for k > n")
	}
	if _, err := r.Sample(3, -1); err == nil {
		t.Error("Sample(3, -1): want error for negative k")
	}
}

// Check values: spec RNG appendix (seed(0) rand, randint(10,size=5)); the
// others are NumPy's well-known outputs: np.random.seed(0); rand(3) =
// [0.5488135039273248, 0.7151893663724195, 0.6027633760716439];
// seed(42): randint(0,10,5) = [6,3,7,4,6]; seed(42): permutation(10) =
// [8,1,5,0,7,2,9,4,3,6]; seed(42): rand() = 0.3745401188473625.
func TestLegacyMatchesNumPy(t *testing.T) {
	l, err := NewLegacy(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.5488135039273248, 0.7151893663724195, 0.6027633760716439} {
		if got := l.Rand(); got != want {
			t.Errorf("seed 0: rand()[%d] = %v, want %v", i, got, want)
		}
	}
	_ = l.Seed(0)
	var got []int
	for range 5 {
		got = append(got, l.RandIntN(10))
	}
	if want := []int{5, 0, 3, 3, 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 0: randint(10, size=5) = %v, want %v", got, want)
	}
	_ = l.Seed(42)
	got = got[:0]
	for range 5 {
		got = append(got, l.RandInt(0, 10))
	}
	if want := []int{6, 3, 7, 4, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 42: randint(0, 10, 5) = %v, want %v", got, want)
	}
	_ = l.Seed(42)
	if got, want := l.Permutation(10), []int{8, 1, 5, 0, 7, 2, 9, 4, 3, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("seed 42: permutation(10) = %v, want %v", got, want)
	}
	_ = l.Seed(42)
	if got, want := l.Rand(), 0.3745401188473625; got != want {
		t.Errorf("seed 42: rand() = %v, want %v", got, want)
	}
}

func TestLegacyRandIntOneDrawsNothing(t *testing.T) {
	// randint(1) has range 0: NumPy returns 0 without consuming output.
	a, _ := NewLegacy(7)
	b, _ := NewLegacy(7)
	if v := a.RandIntN(1); v != 0 {
		t.Fatalf("randint(1) = %d", v)
	}
	if a.Uint32() != b.Uint32() {
		t.Error("randint(1) consumed a draw")
	}
}

func TestLegacySeedRange(t *testing.T) {
	if _, err := NewLegacy(-1); err == nil {
		t.Error("seed -1: want error")
	}
	if _, err := NewLegacy(1 << 32); err == nil {
		t.Error("seed 2^32: want error")
	}
	if _, err := NewLegacy(1<<32 - 1); err != nil {
		t.Errorf("seed 2^32-1: %v", err)
	}
}

// Check values: spec RNG appendix (default_rng(0).random(),
// default_rng(42).random()); NumPy docs: default_rng(42).random(3) =
// [0.7739560485559633, 0.4388784397520523, 0.8585979199113825];
// default_rng(12345).random() = 0.22733602246716966 and
// default_rng(12345).integers(0, 10, size=3) = [6, 2, 7].
func TestGeneratorMatchesNumPy(t *testing.T) {
	g, err := NewGenerator(0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Random(), 0.6369616873214543; got != want {
		t.Errorf("default_rng(0).random() = %v, want %v", got, want)
	}
	g, _ = NewGenerator(42)
	for i, want := range []float64{0.7739560485559633, 0.4388784397520523, 0.8585979199113825} {
		if got := g.Random(); got != want {
			t.Errorf("default_rng(42).random()[%d] = %v, want %v", i, got, want)
		}
	}
	g, _ = NewGenerator(12345)
	if got, want := g.Random(), 0.22733602246716966; got != want {
		t.Errorf("default_rng(12345).random() = %v, want %v", got, want)
	}
	// seeds past int64 (Python ints): default_rng(2**63 + 2) and (2**64 - 2)
	for _, c := range []struct {
		a, b int64
		want float64
	}{
		{math.MaxInt64, 3, 0.43675137666779695}, {math.MaxInt64, math.MaxInt64, 0.22069353795661772}, {-3, 5, 0},
	} {
		g, err := NewGeneratorSum(c.a, c.b)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == 0 {
			c.want = NewGeneratorUint64(2).Random()
		}
		if got := g.Random(); got != c.want {
			t.Errorf("default_rng(%d + %d).random() = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	for _, c := range [][2]int64{{-3, 2}, {math.MinInt64, -1}, {math.MinInt64, math.MaxInt64}} {
		if _, err := NewGeneratorSum(c[0], c[1]); err == nil {
			t.Errorf("default_rng(%d + %d): want NumPy's negative-seed error", c[0], c[1])
		}
	}
	g, _ = NewGenerator(12345)
	var ints []int64
	for range 3 {
		ints = append(ints, g.Integers(0, 10))
	}
	if want := []int64{6, 2, 7}; !reflect.DeepEqual(ints, want) {
		t.Errorf("default_rng(12345).integers(0,10,3) = %v, want %v", ints, want)
	}
}

func TestGeneratorNext32HalfBuffer(t *testing.T) {
	// next32 hands out the low then the high half of one next64.
	a, _ := NewGenerator(5)
	b, _ := NewGenerator(5)
	v := b.Uint64()
	if lo := a.Uint32(); lo != uint32(v) {
		t.Errorf("first next32 = %#x, want low half %#x", lo, uint32(v))
	}
	if hi := a.Uint32(); hi != uint32(v>>32) {
		t.Errorf("second next32 = %#x, want high half %#x", hi, uint32(v>>32))
	}
	// random() does not clear a pending half: a draws next32 (low half of
	// w), then random() (consumes x), then next32 returns w's high half.
	w := b.Uint64()
	_ = b.Uint64()
	a.Uint32()
	_ = a.Random()
	if got := a.Uint32(); got != uint32(w>>32) {
		t.Errorf("buffered half after random() = %#x, want %#x", got, uint32(w>>32))
	}
}

func TestGeneratorIntegersRangeZeroDrawsNothing(t *testing.T) {
	a, _ := NewGenerator(3)
	b, _ := NewGenerator(3)
	if v := a.Integers(4, 5); v != 4 {
		t.Fatalf("integers(4,5) = %d", v)
	}
	if a.Uint64() != b.Uint64() {
		t.Error("integers over a one-value range consumed a draw")
	}
}

func TestChoiceP(t *testing.T) {
	// cdf of [0.9, 0.1] is [0.9, 1.0]/1.0; searchsorted right: u < 0.9 -> 0.
	g, _ := NewGenerator(0)
	ref, _ := NewGenerator(0)
	for range 50 {
		u := ref.Random()
		want := 0
		if u >= 0.9 {
			want = 1
		}
		got, err := g.ChoiceP([]float64{0.9, 1 - 0.9})
		if err != nil || got != want {
			t.Fatalf("ChoiceP = %d (%v), want %d for u=%v", got, err, want, u)
		}
	}
	if _, err := g.ChoiceP([]float64{0.5, 0.4}); err == nil {
		t.Error("probabilities summing to 0.9: want error")
	}
	if _, err := g.ChoiceP([]float64{-0.5, 1.5}); err == nil {
		t.Error("negative probability: want error")
	}
	if _, err := g.ChoiceP(nil); err == nil {
		t.Error("empty p: want error")
	}
}

func TestNegativeGeneratorSeed(t *testing.T) {
	if _, err := NewGenerator(-1); err == nil {
		t.Error("want error for negative seed")
	}
}

// Intn of every generator stays in range and hits every value.
func TestIntnRange(t *testing.T) {
	l, _ := NewLegacy(1)
	g, _ := NewGenerator(1)
	for _, r := range []interface{ Intn(int) int }{NewRandom(1), l, g} {
		seen := map[int]bool{}
		for range 2000 {
			v := r.Intn(7)
			if v < 0 || v >= 7 {
				t.Fatalf("%T.Intn(7) = %d", r, v)
			}
			seen[v] = true
		}
		if len(seen) != 7 {
			t.Errorf("%T.Intn(7) hit %d of 7 values", r, len(seen))
		}
	}
}

func BenchmarkRandomFloat(b *testing.B) {
	r := NewRandom(1)
	for b.Loop() {
		_ = r.Random()
	}
}

func BenchmarkGeneratorFloat(b *testing.B) {
	g, _ := NewGenerator(1)
	for b.Loop() {
		_ = g.Random()
	}
}

// NumPy docs/tutorial values: default_rng(42).integers(0, 10, size=5) =
// [0, 7, 6, 4, 4]; default_rng(42).permutation(10) =
// [5, 6, 0, 7, 3, 2, 4, 9, 1, 8] (random_interval masked draws on next32).
func TestGeneratorIntegersAndPermutation(t *testing.T) {
	g, _ := NewGenerator(42)
	var got []int64
	for range 5 {
		got = append(got, g.Integers(0, 10))
	}
	if want := []int64{0, 7, 6, 4, 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("integers(0,10,5) = %v, want %v", got, want)
	}
	g, _ = NewGenerator(42)
	if got, want := g.Permutation(10), []int{5, 6, 0, 7, 3, 2, 4, 9, 1, 8}; !reflect.DeepEqual(got, want) {
		t.Errorf("permutation(10) = %v, want %v", got, want)
	}
}
