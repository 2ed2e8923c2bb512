package site

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// book is one title in the books.example catalogue.
type book struct {
	ID     int
	Title  string
	Author string
	Genre  string
	Cents  int
}

// catalogue is the fixed books.example catalogue. Intents pin answers to it:
// change it and the example intents' baselines with it.
var catalogue = []book{
	{1, "The Lantern Keeper", "Ada Quill", "fiction", 1499},
	{2, "Salt and Cinder", "Ada Quill", "fiction", 1250},
	{3, "Maps of the Quiet Sea", "Ada Quill", "fiction", 1800},
	{4, "A Field Guide to Small Rain", "Ada Quill", "poetry", 975},
	{5, "The Clockmaker's Daughter", "Ada Quill", "fiction", 1625},
	{6, "Northbound Letters", "Ada Quill", "fiction", 1140},
	{7, "Winter Orchard", "Ada Quill", "poetry", 895},
	{8, "The Glass Meridian", "Ada Quill", "fiction", 2100},
	{9, "Notes from the Tide Line", "Ada Quill", "essays", 1330},
	{10, "Paper Boats", "Ada Quill", "poetry", 749},
	{11, "Iron Psalms", "Bram Okafor", "poetry", 1000},
	{12, "The Cartographer's Error", "Bram Okafor", "fiction", 1580},
	{13, "Low Country Hymns", "Bram Okafor", "poetry", 920},
	{14, "Engines of Mercy", "Bram Okafor", "fiction", 1999},
	{15, "A Short History of Lamps", "Bram Okafor", "essays", 1200},
	{16, "River Without a Name", "Bram Okafor", "fiction", 1375},
	{17, "Dust Choir", "Bram Okafor", "poetry", 680},
	{18, "Quiet Arithmetic", "Celia Marsh", "essays", 1110},
	{19, "The Orchard Wall", "Celia Marsh", "fiction", 1400},
	{20, "Small Hours", "Celia Marsh", "poetry", 810},
	{21, "Harbor Lights", "Dmitri Vale", "fiction", 1745},
	{22, "Ledger of Birds", "Dmitri Vale", "poetry", 795},
	{23, "Cold Iron Stars", "Dmitri Vale", "fiction", 2250},
	{24, "On Walking", "Dmitri Vale", "essays", 999},
}

var genres = []string{"fiction", "poetry", "essays"}

// pageSize is how many results one listing page shows; the cheapest book of
// an author with many titles is deliberately not on the first page.
const pageSize = 4

func money(cents int) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

// byTitle lists books sorted by title, as the pages show them.
func byTitle(match func(book) bool) []book {
	var out []book
	for _, b := range catalogue {
		if match(b) {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b book) int { return strings.Compare(a.Title, b.Title) })
	return out
}

// cheapestFirst lists books by price, then title, as the API answers.
func cheapestFirst(bs []book) []book {
	out := slices.Clone(bs)
	slices.SortFunc(out, func(a, b book) int { return cmp.Or(cmp.Compare(a.Cents, b.Cents), strings.Compare(a.Title, b.Title)) })
	return out
}

func byAuthor(author string) func(book) bool {
	want := strings.ToLower(strings.Join(strings.Fields(author), " "))
	return func(b book) bool { return want != "" && strings.ToLower(b.Author) == want }
}

func byGenre(genre string) func(book) bool {
	want := strings.ToLower(strings.TrimSpace(genre))
	return func(b book) bool { return b.Genre == want }
}

// listing is the data of a paginated result page.
type listing struct {
	Heading  string
	Base     string // the page's URL up to where "page=N" is appended
	Books    []book
	Total    int
	Page     int
	Pages    int
	PrevPage int
	NextPage int
}

func paginate(heading, base string, all []book, pageParam string) listing {
	pages := max(1, (len(all)+pageSize-1)/pageSize)
	page, err := strconv.Atoi(pageParam)
	if err != nil || page < 1 {
		page = 1
	}
	page = min(page, pages)
	lo := (page - 1) * pageSize
	hi := min(lo+pageSize, len(all))
	l := listing{Heading: heading, Base: base, Books: all[lo:hi], Total: len(all), Page: page, Pages: pages}
	if page > 1 {
		l.PrevPage = page - 1
	}
	if page < pages {
		l.NextPage = page + 1
	}
	return l
}

// apiBook is one book as the JSON API returns it.
type apiBook struct {
	ID       int     `json:"id"`
	Title    string  `json:"title"`
	Author   string  `json:"author"`
	Genre    string  `json:"genre"`
	Price    string  `json:"price"`
	PriceUSD float64 `json:"price_usd"`
}

func apiBooks(bs []book) []apiBook {
	out := make([]apiBook, 0, len(bs))
	for _, b := range bs {
		out = append(out, apiBook{ID: b.ID, Title: b.Title, Author: b.Author, Genre: b.Genre, Price: money(b.Cents), PriceUSD: float64(b.Cents) / 100})
	}
	return out
}

func newBooks(tmpl *template.Template) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		render(w, tmpl, "books_home.html", genres)
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		author := r.URL.Query().Get("author")
		l := paginate("Books by "+author, "/search?author="+url.QueryEscape(author)+"&", byTitle(byAuthor(author)), r.URL.Query().Get("page"))
		render(w, tmpl, "books_list.html", l)
	})
	mux.HandleFunc("GET /genre/{genre}", func(w http.ResponseWriter, r *http.Request) {
		g := r.PathValue("genre")
		if !slices.Contains(genres, g) {
			http.NotFound(w, r)
			return
		}
		l := paginate("Genre: "+g, "/genre/"+g+"?", byTitle(byGenre(g)), r.URL.Query().Get("page"))
		render(w, tmpl, "books_list.html", l)
	})
	mux.HandleFunc("GET /book/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		i := slices.IndexFunc(catalogue, func(b book) bool { return b.ID == id })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		render(w, tmpl, "books_book.html", catalogue[i])
	})
	mux.HandleFunc("GET /api/books", func(w http.ResponseWriter, r *http.Request) {
		author := r.URL.Query().Get("author")
		if strings.TrimSpace(author) == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "error": "author is required"})
			return
		}
		bs := cheapestFirst(byTitle(byAuthor(author)))
		writeJSON(w, http.StatusOK, map[string]any{"author": author, "count": len(bs), "books": apiBooks(bs)})
	})
	mux.HandleFunc("GET /api/genre", func(w http.ResponseWriter, r *http.Request) {
		g := r.URL.Query().Get("genre")
		if !slices.Contains(genres, strings.ToLower(g)) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "error": "genre must be one of " + strings.Join(genres, ", ")})
			return
		}
		bs := cheapestFirst(byTitle(byGenre(g)))
		writeJSON(w, http.StatusOK, map[string]any{"genre": strings.ToLower(g), "count": len(bs), "books": apiBooks(bs)})
	})
	mux.HandleFunc("POST /api/cart", func(w http.ResponseWriter, r *http.Request) {
		// Stateless on purpose: the example never keeps a cart.
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "note": "example cart; nothing is kept"})
	})
	return mux
}
