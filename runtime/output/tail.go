package output

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
)

// ring keeps the last len(buf) lines handed to it.
type ring struct {
	buf  []string
	next int
	full bool
}

func newRing(n int) ring { return ring{buf: make([]string, n)} }

func (r *ring) add(s string) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) lines() []string {
	var lines []string // nil when empty, as Last returns
	if r.full {
		lines = append(lines, r.buf[r.next:]...)
	}
	return append(lines, r.buf[:r.next]...)
}

// Tail returns the last TailLines lines written since Open, oldest first, for
// error messages ("last output: ..."). An unfinished last line counts. It
// reads no file, so it holds what the file may have missed.
func (l *Log) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.tail.lines()
	if len(l.partial) > 0 {
		lines = append(lines, string(l.partial))
	}
	if len(lines) > l.opt.TailLines {
		lines = lines[len(lines)-l.opt.TailLines:]
	}
	return lines
}

// Last returns the last n lines of the files, oldest first, reading back
// into rotated files when the current one holds fewer, and across earlier
// runs. Lines are cut as for followers; an unfinished last line counts.
func (l *Log) Last(n int) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last(n, 0)
}

// last reads the last n lines of the files, leaving out their final skip
// bytes. l.mu must be held, so that no rotation moves the files meanwhile.
func (l *Log) last(n int, skip int64) ([]string, error) {
	if n <= 0 || !l.regular {
		return nil, nil
	}
	s, err := l.openStream()
	if err != nil {
		return nil, err
	}
	defer s.close()
	return lastLines(s, max(0, s.size-skip), n)
}

// stream reads the log's files as one, oldest first: path.Keep … path.1,
// path. A rotation may cut a line between two files; here it is whole again.
type stream struct {
	files []*os.File
	sizes []int64
	size  int64
}

func (l *Log) openStream() (*stream, error) {
	s := &stream{}
	for i := l.opt.Keep; i >= 0; i-- {
		name := l.path
		if i > 0 {
			name = l.rotated(i)
		}
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			s.close()
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			s.close()
			return nil, err
		}
		s.files = append(s.files, f)
		s.sizes = append(s.sizes, fi.Size())
		s.size += fi.Size()
	}
	return s, nil
}

func (s *stream) close() {
	for _, f := range s.files {
		_ = f.Close()
	}
}

func (s *stream) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i, f := range s.files {
		if n == len(p) {
			break
		}
		if off >= s.sizes[i] {
			off -= s.sizes[i]
			continue
		}
		m := int(min(int64(len(p)-n), s.sizes[i]-off))
		k, err := f.ReadAt(p[n:n+m], off)
		n += k
		if err != nil {
			return n, err
		}
		off = 0
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// lastLines returns the last n lines of r[:size], cutting a line longer than
// maxLine from its start as Log.split does. It reads backwards in chunks, so
// it holds at most n lines and one chunk, however long the lines.
func lastLines(r io.ReaderAt, size int64, n int) ([]string, error) {
	if size <= 0 {
		return nil, nil
	}
	sc := backScanner{r: r, buf: make([]byte, 0, scanChunk)}
	end := size // end of the current line, excluding its '\n'
	nl, err := sc.prevNewline(end)
	if err == nil && nl == end-1 {
		end = nl // a final '\n' ends the last line; it does not start another
		nl, err = sc.prevNewline(end)
	}
	var out []string // newest first
	for err == nil {
		start := nl + 1
		pieces := max(1, (end-start+maxLine-1)/maxLine)
		for k := pieces - 1; k >= 0 && len(out) < n; k-- {
			from := start + k*maxLine
			b := make([]byte, min(from+maxLine, end)-from)
			if _, err := r.ReadAt(b, from); err != nil {
				return nil, err
			}
			out = append(out, string(b))
		}
		if len(out) == n || nl < 0 {
			slices.Reverse(out)
			return out, nil
		}
		end = nl
		nl, err = sc.prevNewline(end)
	}
	return nil, err
}

// scanChunk is how much lastLines reads at a time looking for newlines.
const scanChunk = 64 << 10

type backScanner struct {
	r   io.ReaderAt
	buf []byte
	off int64 // buf holds r[off : off+len(buf)]
}

// prevNewline returns the offset of the last '\n' before pos, or -1.
func (b *backScanner) prevNewline(pos int64) (int64, error) {
	for pos > 0 {
		if pos <= b.off || pos > b.off+int64(len(b.buf)) {
			start := max(0, pos-scanChunk)
			b.buf = b.buf[:pos-start]
			if _, err := b.r.ReadAt(b.buf, start); err != nil {
				return 0, err
			}
			b.off = start
		}
		if i := bytes.LastIndexByte(b.buf[:pos-b.off], '\n'); i >= 0 {
			return b.off + int64(i), nil
		}
		pos = b.off
	}
	return -1, nil
}
