package site

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get requests path on host through the handler and returns the status
// and body.
func get(t *testing.T, h http.Handler, host, path string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(b)
}

func TestHostRouting(t *testing.T) {
	h := New()
	assert.Equal(t, []string{"books.example", "weather.example"}, Hosts())

	code, body := get(t, h, "books.example", "/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<h1>Books Example</h1>")

	code, body = get(t, h, "books.example:8080", "/")
	assert.Equal(t, http.StatusOK, code, "a port in the Host header is ignored")
	assert.Contains(t, body, "Books Example")

	code, body = get(t, h, "WEATHER.example", "/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "Weather Example")

	code, _ = get(t, h, "evil.example", "/")
	assert.Equal(t, http.StatusNotFound, code)
}

func TestBooksPagesAreOperable(t *testing.T) {
	h := New()
	_, home := get(t, h, "books.example", "/")
	assert.Contains(t, home, `<label for="author">Author</label>`)
	assert.Contains(t, home, `<input id="author" name="author"`)
	assert.Contains(t, home, `<button type="submit">Search</button>`)
	assert.Contains(t, home, `<a href="/genre/poetry">poetry</a>`)
}

var rowRE = regexp.MustCompile(`<tr><td><a href="/book/\d+">([^<]+)</a></td><td>[^<]+</td><td>[^<]+</td><td>\$([0-9.]+)</td></tr>`)

// walkPages follows "Next page" links from path and returns each title
// with its price, and how many pages it read.
func walkPages(t *testing.T, h http.Handler, path string) (map[string]string, int) {
	t.Helper()
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">Next page</a>`)
	out := map[string]string{}
	pages := 0
	for path != "" && pages < 10 {
		code, body := get(t, h, "books.example", path)
		require.Equal(t, http.StatusOK, code, path)
		pages++
		for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
			out[html.UnescapeString(m[1])] = m[2]
		}
		path = ""
		if m := next.FindStringSubmatch(body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	return out, pages
}

// The example intents' baselines depend on these facts: the page needs three
// result pages for Ada Quill, the cheapest is on page 2, and the API answers
// the same in one call.
func TestBooksSearchNeedsSeveralPages(t *testing.T) {
	h := New()
	_, first := get(t, h, "books.example", "/search?author=Ada+Quill")
	assert.Contains(t, first, "10 books. Page 1 of 3.")
	assert.NotContains(t, first, "Paper Boats", "the cheapest book is not on the first page")

	books, pages := walkPages(t, h, "/search?author=ada+quill")
	assert.Equal(t, 3, pages)
	assert.Len(t, books, 10)
	assert.Equal(t, "7.49", books["Paper Boats"])
	for title, price := range books {
		p, err := strconv.ParseFloat(price, 64)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, p, 7.49, title)
	}

	counted, pages := walkPages(t, h, "/search?author=Bram%20Okafor")
	assert.Equal(t, 2, pages)
	assert.Len(t, counted, 7)

	poetry, pages := walkPages(t, h, "/genre/poetry")
	assert.Equal(t, 2, pages)
	assert.Len(t, poetry, 8)
	assert.Equal(t, "6.80", poetry["Dust Choir"])

	_, none := get(t, h, "books.example", "/search?author=Nobody")
	assert.Contains(t, none, "No books found.")
}

func TestBooksAPI(t *testing.T) {
	h := New()
	code, body := get(t, h, "books.example", "/api/books?author=Ada%20Quill")
	require.Equal(t, http.StatusOK, code)
	var res struct {
		Count int `json:"count"`
		Books []struct {
			Title    string  `json:"title"`
			Price    string  `json:"price"`
			PriceUSD float64 `json:"price_usd"`
		} `json:"books"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	require.Equal(t, 10, res.Count)
	assert.Equal(t, "Paper Boats", res.Books[0].Title, "cheapest first")
	assert.Equal(t, "$7.49", res.Books[0].Price)
	assert.Equal(t, 7.49, res.Books[0].PriceUSD)
	for i := 1; i < len(res.Books); i++ {
		assert.LessOrEqual(t, res.Books[i-1].PriceUSD, res.Books[i].PriceUSD)
	}

	code, body = get(t, h, "books.example", "/api/genre?genre=poetry")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	assert.Equal(t, 8, res.Count)
	assert.Equal(t, "Dust Choir", res.Books[0].Title)

	code, body = get(t, h, "books.example", "/api/books")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.JSONEq(t, `{"status":"error","error":"author is required"}`, body)

	code, _ = get(t, h, "books.example", "/api/genre?genre=cookbooks")
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestWeather(t *testing.T) {
	h := New()
	_, page := get(t, h, "weather.example", "/")
	assert.Regexp(t, `<th scope="row">Oslo</th><td>Snow showers</td><td>4</td><td>-2</td>`, page)

	code, body := get(t, h, "weather.example", "/api/cities")
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"cities":["Bergen","Lisbon","Nairobi","Oslo","Quito","Reykjavik"]}`, body)
	assert.NotContains(t, body, "4", "the tool's data gives no temperatures")
}

func TestSiteIsDeterministic(t *testing.T) {
	a, b := New(), New()
	for _, path := range []string{"/", "/search?author=Ada+Quill&page=2", "/genre/essays", "/book/10", "/api/books?author=Celia+Marsh"} {
		_, x := get(t, a, "books.example", path)
		_, y := get(t, b, "books.example", path)
		assert.Equal(t, x, y, path)
	}
}
