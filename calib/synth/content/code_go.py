"""Go source templates: a package header and the blocks a synthetic file is assembled from."""

from __future__ import annotations

GO_HEADER = """// Package @pkg@ implements @domain@ @purpose@.
package @pkg@

import (
\t"context"
\t"errors"
\t"fmt"
\t"sort"
\t"time"
)

// Err@Ent@NotFound is returned when a @ent@ does not exist.
var Err@Ent@NotFound = errors.New("@ent@ not found")

// @Ent@ is one @ent@ as stored in the database.
type @Ent@ struct {
\tID        string    `json:"id"`
\t@Text@ string    `json:"@text@"`
\t@Num@  int64     `json:"@num@"`
\t@Group@    string    `json:"@group@"`
\tStatus    string    `json:"status"`
\tCreatedAt time.Time `json:"created_at"`
}

// Store loads and saves @ents@.
type Store interface {
\tGet(ctx context.Context, id string) (*@Ent@, error)
\tList(ctx context.Context, limit int) ([]@Ent@, error)
\tSave(ctx context.Context, v *@Ent@) error
}
"""

GO_BLOCKS = [
    """
// @Verb@WithRetry calls fn until it succeeds, the context ends or attempts run out.
func @Verb@WithRetry(ctx context.Context, attempts int, fn func(context.Context) error) error {
\tdelay := 200 * time.Millisecond
\tvar err error
\tfor i := 0; i < attempts; i++ {
\t\tif err = fn(ctx); err == nil {
\t\t\treturn nil
\t\t}
\t\tselect {
\t\tcase <-ctx.Done():
\t\t\treturn fmt.Errorf("@verb@: %w (last error: %v)", ctx.Err(), err)
\t\tcase <-time.After(delay):
\t\t}
\t\tdelay *= 2
\t}
\treturn fmt.Errorf("@verb@: giving up after %d attempts: %w", attempts, err)
}
""",
    """
// TotalsBy@Group@ sums @Num@ per @Group@, in key order.
func TotalsBy@Group@(items []@Ent@) []struct {
\tKey   string
\tTotal int64
} {
\tsums := map[string]int64{}
\tfor _, it := range items {
\t\tif it.Status == "failed" {
\t\t\tcontinue
\t\t}
\t\tsums[it.@Group@] += it.@Num@
\t}
\tkeys := make([]string, 0, len(sums))
\tfor k := range sums {
\t\tkeys = append(keys, k)
\t}
\tsort.Strings(keys)
\tout := make([]struct {
\t\tKey   string
\t\tTotal int64
\t}, 0, len(keys))
\tfor _, k := range keys {
\t\tout = append(out, struct {
\t\t\tKey   string
\t\t\tTotal int64
\t\t}{k, sums[k]})
\t}
\treturn out
}
""",
    """
// Validate reports what is wrong with a @ent@.
func (v *@Ent@) Validate() error {
\tvar errs []error
\tif v.@Text@ == "" {
\t\terrs = append(errs, errors.New("@text@ is required"))
\t}
\tif v.@Num@ < 0 {
\t\terrs = append(errs, fmt.Errorf("@num@ must be >= 0, got %d", v.@Num@))
\t}
\treturn errors.Join(errs...)
}
""",
    """
// Service coordinates the store and the clock.
type Service struct {
\tstore Store
\tnow   func() time.Time
\tttl   time.Duration
}

// Expire marks @ents@ older than the TTL as done and returns how many changed.
func (s *Service) Expire(ctx context.Context) (int, error) {
\t// @cjk_comment@
\titems, err := s.store.List(ctx, @n@)
\tif err != nil {
\t\treturn 0, fmt.Errorf("list @ents@: %w", err)
\t}
\tchanged := 0
\tfor i := range items {
\t\tif s.now().Sub(items[i].CreatedAt) < s.ttl || items[i].Status == "done" {
\t\t\tcontinue
\t\t}
\t\titems[i].Status = "done"
\t\tif err := s.store.Save(ctx, &items[i]); err != nil {
\t\t\treturn changed, err
\t\t}
\t\tchanged++
\t}
\treturn changed, nil
}
""",
]
