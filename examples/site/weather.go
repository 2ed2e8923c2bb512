package site

import (
	"html/template"
	"net/http"
)

// forecast is one city's weather on weather.example.
type forecast struct {
	City      string
	Condition string
	HighC     int
	LowC      int
}

// forecasts is the fixed weather.example table, in page order.
var forecasts = []forecast{
	{"Bergen", "Rain", 7, 3},
	{"Lisbon", "Sunny", 19, 12},
	{"Nairobi", "Cloudy", 24, 13},
	{"Oslo", "Snow showers", 4, -2},
	{"Quito", "Partly cloudy", 18, 9},
	{"Reykjavik", "Windy", 1, -4},
}

func newWeather(tmpl *template.Template) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		render(w, tmpl, "weather_home.html", forecasts)
	})
	mux.HandleFunc("GET /api/cities", func(w http.ResponseWriter, r *http.Request) {
		names := make([]string, len(forecasts))
		for i, f := range forecasts {
			names[i] = f.City
		}
		writeJSON(w, http.StatusOK, map[string]any{"cities": names})
	})
	return mux
}
