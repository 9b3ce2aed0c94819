//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// commentAPI stands in for the one call of the CI examples that cannot
// run here: GitHub's comments on a pull request, or GitLab's notes on a
// merge request. It keeps the comments of one pull request and serves
// what the examples use of the real API: list them, create one, update
// one, each with the API's credential.
type commentAPI struct {
	t      *testing.T
	srv    *httptest.Server
	header string // the header that carries the credential
	cred   string // its value
	list   string // path of the pull request's comments: GET lists, POST creates
	item   string // path of one comment, but for its id
	update string // the method that updates a comment: PATCH or PUT

	mu       sync.Mutex
	comments []apiComment
	calls    []string // "METHOD path" of each request
}

// apiComment is a comment as both APIs show it, in the fields used.
type apiComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// newGitHubAPI serves the comments of pull request 7 of graftland/shop,
// as https://api.github.com does.
func newGitHubAPI(t *testing.T) *commentAPI {
	return startCommentAPI(t, &commentAPI{header: "Authorization", cred: "Bearer gh-token",
		list:   "/repos/graftland/shop/issues/7/comments",
		item:   "/repos/graftland/shop/issues/comments/",
		update: http.MethodPatch})
}

// newGitLabAPI serves the notes of merge request 7 of project 42, under
// /api/v4 as GitLab does.
func newGitLabAPI(t *testing.T) *commentAPI {
	return startCommentAPI(t, &commentAPI{header: "Private-Token", cred: "gl-token",
		list:   "/api/v4/projects/42/merge_requests/7/notes",
		item:   "/api/v4/projects/42/merge_requests/7/notes/",
		update: http.MethodPut})
}

// startCommentAPI serves a on loopback until the test ends. The pull
// request starts with a reviewer's comment, which the examples must
// leave alone, and enough others (a bot's) that the plan's comment
// lands past the first page of the largest a list answers (100).
func startCommentAPI(t *testing.T, a *commentAPI) *commentAPI {
	a.t = t
	a.comments = []apiComment{{ID: 100, Body: "Looks good to me."}}
	for i := 1; i < busyThread; i++ {
		a.comments = append(a.comments, apiComment{ID: int64(100 + i), Body: fmt.Sprintf("Build %d passed.", i)})
	}
	a.srv = httptest.NewServer(a)
	t.Cleanup(a.srv.Close)
	return a
}

// ServeHTTP answers as the real API would, in what the examples use.
func (a *commentAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get(a.header) != a.cred {
		http.Error(w, `{"message": "Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	id, isItem := strings.CutPrefix(r.URL.Path, a.item)
	switch {
	case r.URL.Path == a.list && r.Method == http.MethodGet:
		json.NewEncoder(w).Encode(a.page(r))
	case r.URL.Path == a.list && r.Method == http.MethodPost:
		c := apiComment{ID: int64(101 + len(a.comments)), Body: a.body(w, r)}
		if c.Body != "" {
			a.comments = append(a.comments, c)
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(c)
		}
	case isItem && r.Method == a.update:
		n, _ := strconv.ParseInt(id, 10, 64)
		for i := range a.comments {
			if a.comments[i].ID == n {
				if body := a.body(w, r); body != "" {
					a.comments[i].Body = body
					json.NewEncoder(w).Encode(a.comments[i])
				}
				return
			}
		}
		http.NotFound(w, r)
	default:
		a.t.Errorf("the API was asked %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

// busyThread is how many comments a pull request has before the plan's.
const busyThread = 150

// page is the page of comments r asks for, as both APIs paginate:
// per_page of them (default 30, at most 100: GitHub's; GitLab's default
// is 20), page counting from 1.
func (a *commentAPI) page(r *http.Request) []apiComment {
	per, err := strconv.Atoi(r.URL.Query().Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	from := min((n-1)*per, len(a.comments))
	return a.comments[from:min(from+per, len(a.comments))]
}

// body is the body of a comment sent as {"body": "..."}, or "" after
// answering 400.
func (a *commentAPI) body(w http.ResponseWriter, r *http.Request) string {
	var c struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Body == "" {
		a.t.Errorf("%s %s: not a comment: %v", r.Method, r.URL, err)
		http.Error(w, fmt.Sprintf(`{"message": "body: %v"}`, err), http.StatusBadRequest)
		return ""
	}
	return c.Body
}

// state returns a copy of the comments and of the calls so far.
func (a *commentAPI) state() ([]apiComment, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]apiComment(nil), a.comments...), append([]string(nil), a.calls...)
}
