package ec2sim

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an EC2 error response: the code the SDK surfaces as
// smithy.APIError.ErrorCode(), the message, and the HTTP status EC2 sends
// with it (which decides whether the SDK retries).
type apiError struct {
	Code    string
	Message string
	Status  int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...), Status: status}
}

// clientErr is a 400 with the given code, the status EC2 uses for every
// caller mistake.
func clientErr(code, format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, code, format, args...)
}

func invalidParam(format string, args ...any) *apiError {
	return clientErr("InvalidParameterValue", format, args...)
}

func missingParam(name string) *apiError {
	return clientErr("MissingParameter", "The request must contain the parameter %s", name)
}

func notFound(code, format string, args ...any) *apiError {
	return clientErr(code, format, args...)
}

// dryRunError is what EC2 answers to DryRun=true when the caller would have
// been allowed: an error, with status 412, and nothing done.
func dryRunError() *apiError {
	return errorf(http.StatusPreconditionFailed, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
}

// quotedIDs renders IDs the way EC2 error messages list them.
func quotedIDs(ids []string) string { return "'" + strings.Join(ids, ", ") + "'" }
