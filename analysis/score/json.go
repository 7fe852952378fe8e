package score

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
)

// WriteJSON writes sc as indented JSON (`scores --json`), every
// intermediate value included; NaN (unknown) and infinite figures become
// null, which encoding/json cannot do by itself (it refuses them), so a
// score that could not be computed is still a readable document.
func (sc Scores) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(nanSafe(reflect.ValueOf(sc)))
}

// nanSafe turns v into plain maps, slices and values with every NaN or
// infinite float replaced by nil (JSON null).
func nanSafe(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Struct:
		m := map[string]any{}
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				if inner, ok := nanSafe(v.Field(i)).(map[string]any); ok {
					for k, x := range inner {
						m[k] = x
					}
				}
				continue
			}
			m[sf.Name] = nanSafe(v.Field(i))
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = nanSafe(v.Index(i))
		}
		return out
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = nanSafe(v.MapIndex(k))
		}
		return m
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nanSafe(v.Elem())
	}
	return v.Interface()
}
