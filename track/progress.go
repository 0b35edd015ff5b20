package track

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode selects how a Progress bar is drawn.
type Mode int

const (
	// ModeAuto draws in place when the writer is a terminal (an *os.File
	// that is a character device) and prints plain lines otherwise.
	ModeAuto Mode = iota
	// ModeTTY redraws the bar in place with '\r' and an erase-line escape.
	ModeTTY
	// ModePlain prints one complete line per update, for CI logs.
	ModePlain
)

// Field is one headline value shown after the bar ("reward=0.512").
type Field struct {
	Name  string
	Value float64
}

// ProgressOptions configures a Progress bar. The zero value is usable.
type ProgressOptions struct {
	Total   int    // number of units; 0 when unknown (no bar, no ETA)
	Initial int    // units already done (a resumed run); rates count from here
	Unit    string // "it" by default; the trainer uses "step"
	Mode    Mode
	Width   int // bar cells, 20 by default
	// MinInterval throttles plain-mode lines: an update prints only when
	// MinInterval has passed since the last printed line (the first and the
	// final update always print). Zero prints every update.
	MinInterval time.Duration
	Now         func() time.Time // clock, time.Now by default (tests inject one)
}

// Progress is a tqdm-like progress bar:
//
//	Title:  12%|##        | 12/100 [01:23<10:02,  6.92s/it, reward=0.512]
//
// It is safe for concurrent use.
type Progress struct {
	mu        sync.Mutex
	w         io.Writer
	title     string
	opt       ProgressOptions
	tty       bool
	start     time.Time
	n         int
	fields    []Field
	lastPrint time.Time
	printed   bool // plain mode: the current state has been printed
	drawn     bool // tty mode: a bar is on the current line
	done      bool
	err       error
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0
}

// NewProgress starts a progress bar titled title that writes to w. The clock
// starts now; nothing is printed until the first update.
func NewProgress(w io.Writer, title string, opt ProgressOptions) *Progress {
	if opt.Unit == "" {
		opt.Unit = "it"
	}
	if opt.Width <= 0 {
		opt.Width = 20
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Total < 0 {
		opt.Total = 0
	}
	tty := opt.Mode == ModeTTY || (opt.Mode == ModeAuto && IsTerminal(w))
	return &Progress{w: w, title: title, opt: opt, tty: tty, start: opt.Now(), n: opt.Initial}
}

// Set moves the bar to n units done and replaces the headline fields.
func (p *Progress) Set(n int, fields ...Field) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = n
	p.fields = append(p.fields[:0], fields...)
	p.update(false)
}

// Add advances the bar by delta units, keeping the headline fields.
func (p *Progress) Add(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += delta
	p.update(false)
}

// Println prints line above the bar (on a terminal the bar is erased, the
// line printed and the bar redrawn below it).
func (p *Progress) Println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		p.write("\r\x1b[K" + line + "\n" + p.render())
		return
	}
	p.write(line + "\n")
}

// Finish prints the final state (if not printed yet) and ends the bar's line.
// Later updates are ignored. It returns the first write error seen.
func (p *Progress) Finish() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.update(true)
		if p.tty && p.drawn {
			p.write("\n")
		}
		p.done = true
	}
	return p.err
}

// Err returns the first write error seen.
func (p *Progress) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// String renders the current state as one line, without control characters.
func (p *Progress) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.render()
}

func (p *Progress) update(final bool) {
	if p.done {
		return
	}
	now := p.opt.Now()
	if p.tty {
		p.write("\r" + p.render() + "\x1b[K")
		p.drawn = true
		return
	}
	if final && p.printed {
		return
	}
	if !final && p.opt.MinInterval > 0 && !p.lastPrint.IsZero() &&
		now.Sub(p.lastPrint) < p.opt.MinInterval && !(p.opt.Total > 0 && p.n >= p.opt.Total) {
		p.printed = false
		return
	}
	p.write(p.render() + "\n")
	p.lastPrint = now
	p.printed = true
}

func (p *Progress) write(s string) {
	if p.err != nil {
		return
	}
	if _, err := io.WriteString(p.w, s); err != nil {
		p.err = fmt.Errorf("track: progress: %w", err)
	}
}

// render builds tqdm's default line:
// "{title}: {pct:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]".
func (p *Progress) render() string {
	elapsed := p.opt.Now().Sub(p.start).Seconds()
	if elapsed < 0 {
		elapsed = 0
	}
	done := p.n - p.opt.Initial
	var sb strings.Builder
	if p.title != "" {
		sb.WriteString(p.title)
		sb.WriteString(": ")
	}
	total := p.opt.Total
	var rate string
	perUnit := math.NaN() // seconds per unit
	if done > 0 && elapsed > 0 {
		perUnit = elapsed / float64(done)
	}
	switch {
	case math.IsNaN(perUnit):
		rate = "?" + p.opt.Unit + "/s"
	case perUnit > 1: // tqdm inverts the rate only above 1 s per unit
		rate = fmt.Sprintf("%5.2fs/%s", perUnit, p.opt.Unit)
	default:
		rate = fmt.Sprintf("%5.2f%s/s", 1/perUnit, p.opt.Unit)
	}
	if total > 0 {
		frac := float64(p.n) / float64(total)
		frac = math.Max(0, math.Min(1, frac))
		fmt.Fprintf(&sb, "%3.0f%%|%s| %d/%d [%s<", frac*100, p.bar(frac), p.n, total, fmtInterval(elapsed))
		if math.IsNaN(perUnit) {
			sb.WriteString("?")
		} else {
			sb.WriteString(fmtInterval(perUnit * float64(max(total-p.n, 0))))
		}
		sb.WriteString(", ")
	} else {
		fmt.Fprintf(&sb, "%d%s [%s, ", p.n, p.opt.Unit, fmtInterval(elapsed))
	}
	sb.WriteString(rate)
	for _, f := range p.fields {
		sb.WriteString(", ")
		sb.WriteString(f.Name)
		sb.WriteByte('=')
		sb.WriteString(formatNum(f.Value))
	}
	sb.WriteByte(']')
	return sb.String()
}

// bar draws frac of Width cells: Unicode eighth blocks on a terminal, '#'
// and tqdm's ASCII digits for the partial cell in plain mode.
func (p *Progress) bar(frac float64) string {
	w := p.opt.Width
	var full, partial []string
	if p.tty {
		full = []string{"█"}
		partial = []string{" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	} else {
		full = []string{"#"}
		partial = []string{" ", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	}
	steps := len(partial)
	cells := int(frac * float64(w*steps))
	nFull, rem := cells/steps, cells%steps
	var sb strings.Builder
	sb.WriteString(strings.Repeat(full[0], nFull))
	if nFull < w {
		sb.WriteString(partial[rem])
		sb.WriteString(strings.Repeat(" ", w-nFull-1))
	}
	return sb.String()
}

// fmtInterval is tqdm's format_interval: "MM:SS", or "H:MM:SS" from one hour.
func fmtInterval(sec float64) string {
	if math.IsNaN(sec) || math.IsInf(sec, 0) || sec > 1e12 {
		return "?"
	}
	t := int64(sec)
	m, s := t/60, t%60
	h, m := m/60, m%60
	if h > 0 {
		return strconv.FormatInt(h, 10) + fmt.Sprintf(":%02d:%02d", m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}
