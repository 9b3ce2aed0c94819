package output

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/graftland/graft/internal/safefs"
)

// Tail returns the last TailLines lines written since Open, oldest first, for
// error messages ("last output: ..."). An unfinished last line counts. It
// reads no file, so it holds what the file may have missed.
func (l *Log) Tail() []string { return l.lines.Tail() }

// Last returns the last n lines of the files, oldest first, reading back
// into rotated files when the current one holds fewer, and across earlier
// runs. Lines are cut as for followers; an unfinished last line counts.
// It holds the n lines in memory: LastTo writes them out instead.
func (l *Log) Last(n int) ([]string, error) {
	s, err := l.LastTo(n)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Lines()
}

// LastTo returns the Section of the files that holds their last n lines,
// as Last counts them, to be written out with its WriteTo.
func (l *Log) LastTo(n int) (*Section, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last(n, false)
}

// last finds the last n lines of the files; with live set, it leaves out
// the file's end that is the current unfinished line, which a follower gets
// whole once it ends. l.mu must be held, so that no rotation moves the
// files meanwhile; the Section's files stay open, so none moves it later.
func (l *Log) last(n int, live bool) (*Section, error) {
	s, err := openStream(l.path, l.opt.Keep)
	if err != nil {
		return nil, err
	}
	end := s.size
	if p := int64(l.lines.Unfinished()); live && p > 0 {
		nl, err := (&backScanner{r: s}).prevNewline(end)
		if err != nil {
			s.close()
			return nil, err
		}
		end = max(nl+1, end-p)
	}
	return section(s, end, n)
}

// LastOf returns the Section holding the last n lines of the log at path,
// with Keep rotated files as opt says, as Log.Last counts them, for a log
// no Log has open: it only reads. A log without any file is an error
// satisfying errors.Is(err, fs.ErrNotExist).
func LastOf(path string, opt Options, n int) (*Section, error) {
	opt = opt.withDefaults()
	s, err := openStream(path, opt.Keep)
	if err != nil {
		return nil, err
	}
	if len(s.files) == 0 {
		return nil, &os.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return section(s, s.size, n)
}

func section(s *stream, end int64, n int) (*Section, error) {
	from, err := lastStart(s, end, n)
	if err != nil {
		s.close()
		return nil, err
	}
	return &Section{r: s, close: s.close, from: from, to: end}, nil
}

// Section is a stretch of a log's files, whole lines, oldest first: the
// last lines at one moment. Its files stay open until Close, so a rotation
// does not move it.
type Section struct {
	r        io.ReaderAt
	close    func()
	from, to int64
}

// WriteTo writes the Section's lines to w, each ended by '\n', lines longer
// than 64 KiB cut as Log.Write cuts them for followers. It reads the files
// forward, a block at a time: its memory is bounded, however many lines.
func (c *Section) WriteTo(w io.Writer) (int64, error) {
	cw := &counter{w: w}
	out := newCutter(cw)
	buf := make([]byte, scanChunk)
	for off := c.from; off < c.to; {
		k, err := c.r.ReadAt(buf[:min(int64(len(buf)), c.to-off)], off)
		if k > 0 {
			out.write(buf[:k])
			off += int64(k)
		}
		if err != nil && !(errors.Is(err, io.EOF) && off == c.to) {
			return cw.n, err
		}
	}
	err := out.end()
	return cw.n, err
}

// Lines returns the Section's lines, in memory.
func (c *Section) Lines() ([]string, error) {
	var b strings.Builder
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	if b.Len() == 0 {
		return nil, nil
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), nil
}

// Close closes the Section's files.
func (c *Section) Close() { c.close() }

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// cutter writes bytes of lines, ending a line that reaches maxLine bytes
// when another byte of it comes, as Lines.Write does.
type cutter struct {
	w   *bufio.Writer
	col int // bytes of the current line written
}

func newCutter(w io.Writer) *cutter { return &cutter{w: bufio.NewWriterSize(w, scanChunk)} }

func (c *cutter) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		for len(seg) > 0 {
			if c.col == maxLine {
				c.w.WriteByte('\n')
				c.col = 0
			}
			k := min(len(seg), maxLine-c.col)
			c.w.Write(seg[:k])
			c.col += k
			seg = seg[k:]
		}
		if i < 0 {
			return
		}
		c.w.WriteByte('\n')
		c.col = 0
		b = b[i+1:]
	}
}

// end ends an unfinished last line and flushes.
func (c *cutter) end() error {
	if c.col > 0 {
		c.w.WriteByte('\n')
		c.col = 0
	}
	return c.w.Flush()
}

// stream reads the log's files as one, oldest first: path.Keep … path.1,
// path. A rotation may cut a line between two files; here it is whole again.
type stream struct {
	files []*os.File
	sizes []int64
	size  int64
}

// openStream opens the files of the log at path for reading, as
// safefs.Open does: a link, a named pipe or a device is refused.
func openStream(path string, keep int) (*stream, error) {
	s := &stream{}
	for i := keep; i >= 0; i-- {
		name := path
		if i > 0 {
			name = rotated(path, i)
		}
		f, err := safefs.Open(name)
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
	s.files = nil
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

// lastStart returns where the last n lines of r[:size] begin, cutting a line
// longer than maxLine from its start as Lines.Write does: the start of a
// line, or of one of its pieces. A final '\n' ends the last line; it does
// not begin another. It reads backwards a chunk at a time, so it holds one
// chunk, however many or long the lines.
func lastStart(r io.ReaderAt, size int64, n int) (int64, error) {
	if size <= 0 || n <= 0 {
		return max(size, 0), nil
	}
	sc := backScanner{r: r}
	end := size // end of the current line, excluding its '\n'
	nl, err := sc.prevNewline(end)
	if err == nil && nl == end-1 {
		end = nl
		nl, err = sc.prevNewline(end)
	}
	for count := 0; err == nil; {
		start := nl + 1
		pieces := max(1, int((end-start+maxLine-1)/maxLine))
		if count+pieces >= n {
			return start + int64(pieces-(n-count))*maxLine, nil
		}
		count += pieces
		if nl < 0 {
			return 0, nil
		}
		end = nl
		nl, err = sc.prevNewline(end)
	}
	return 0, err
}

// scanChunk is how much is read at a time, backwards looking for newlines
// and forwards writing lines out.
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
			if b.buf == nil {
				b.buf = make([]byte, 0, scanChunk)
			}
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
