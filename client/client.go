// Package client is a typed Go client of the Better Compute API, generated
// from the schema (graph/schema) and the operations in operations/ by
// genqlient, with what the generated functions leave to their caller: the
// token on every request, API errors as *Error, subscriptions over
// graphql-transport-ws, and Wait, which follows an instance's events to a
// state.
//
//	c := client.New("http://127.0.0.1:8080/graphql", token)
//	out, err := client.CreateInstance(ctx, c, client.CreateInstanceInput{...})
//	inst, err := c.Wait(ctx, out.CreateInstance.Instance.Id, client.InstanceStateRunning, nil)
package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Client calls the API at one endpoint as one token. It is a
// graphql.Client: pass it to the generated query and mutation functions.
type Client struct {
	endpoint string
	token    string
	http     *http.Client
	gql      graphql.Client
}

// New returns a client of the API at endpoint (its /graphql URL) calling
// as token (bct_…). A nil hc is http.DefaultClient.
func New(endpoint, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{endpoint: endpoint, token: token, http: hc}
	c.gql = graphql.NewClient(endpoint, bearer{token: token, next: hc})
	return c
}

// MakeRequest runs one query or mutation; an error the API answered with
// is an *Error.
func (c *Client) MakeRequest(ctx context.Context, req *graphql.Request, resp *graphql.Response) error {
	return apiError(c.gql.MakeRequest(ctx, req, resp))
}

// bearer puts the token on every request.
type bearer struct {
	token string
	next  graphql.Doer
}

func (b bearer) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.Do(req)
}

// Error is an error the API answered with.
type Error struct {
	// Code is the error's class (extensions.code): UNAUTHENTICATED,
	// FORBIDDEN, NOT_FOUND, INVALID_INPUT, QUOTA_EXCEEDED, CONFLICT,
	// FAILED_PRECONDITION, RATE_LIMITED or INTERNAL.
	Code string
	// Field names the input at fault, when the API names one.
	Field string
	// Message is the API's message; it names the field already.
	Message string
	// Status is the HTTP status it came with (200 for most).
	Status int
}

func (e *Error) Error() string { return e.Message }

// apiError is err as an *Error when the API answered it: the first of
// its GraphQL errors, with the HTTP status when it was not 200.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	status := http.StatusOK
	var list gqlerror.List
	var httpErr *graphql.HTTPError
	switch {
	case errors.As(err, &httpErr):
		status, list = httpErr.StatusCode, httpErr.Response.Errors
	case !errors.As(err, &list):
		return err
	}
	if len(list) == 0 {
		return err
	}
	first := list[0]
	e := &Error{Message: first.Message, Status: status}
	e.Code, _ = first.Extensions["code"].(string)
	e.Field, _ = first.Extensions["field"].(string)
	if e.Code == "" {
		e.Code = "INTERNAL"
	}
	return e
}
