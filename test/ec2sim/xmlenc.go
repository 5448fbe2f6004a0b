package ec2sim

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strconv"
	"time"
)

// ec2Namespace is the XML namespace of every EC2 response for API version
// 2016-11-15, the only version the SDK speaks.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// response is a success body. Each response type embeds responseMeta and is
// encoded as <ActionResponse xmlns="..."> with its fields as children; the
// field tags carry EC2's lower-camel element names, which the SDK matches
// case-insensitively but which are kept exact here.
type response interface{ setRequestID(string) }

type responseMeta struct {
	RequestID string `xml:"requestId"`
}

func (m *responseMeta) setRequestID(id string) { m.RequestID = id }

// itemList is EC2's list encoding: a wrapper element named for the list
// (instancesSet, tagSet, ...) holding one <item> per member. It always
// encodes, empty lists as an empty wrapper, as EC2 does.
type itemList[T any] struct {
	Items []T `xml:"item"`
}

func items[T any](xs []T) itemList[T] { return itemList[T]{Items: xs} }

// optItems is for lists EC2 leaves out entirely when empty (an instance with
// no tags has no tagSet).
func optItems[T any](xs []T) *itemList[T] {
	if len(xs) == 0 {
		return nil
	}
	return &itemList[T]{Items: xs}
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagsXML(m map[string]string) []tagXML {
	var out []tagXML
	for _, k := range sortedKeys(m) {
		out = append(out, tagXML{Key: k, Value: m[k]})
	}
	return out
}

// ec2Time is EC2's timestamp format (millisecond precision, always UTC).
func ec2Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func writeResponse(w http.ResponseWriter, action, requestID string, body response) {
	body.setRequestID(requestID)
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	start := xml.StartElement{
		Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}},
	}
	if err := enc.EncodeElement(body, start); err != nil {
		writeError(w, requestID, errorf(http.StatusInternalServerError, "InternalError", "ec2sim: encoding %s response: %v", action, err))
		return
	}
	if err := enc.Flush(); err != nil {
		writeError(w, requestID, errorf(http.StatusInternalServerError, "InternalError", "ec2sim: encoding %s response: %v", action, err))
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// errorResponse is EC2's error envelope. Note the differences from success
// bodies: no namespace, and RequestID spelled in capitals.
type errorResponse struct {
	XMLName xml.Name `xml:"Response"`
	Errors  []struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Errors>Error"`
	RequestID string `xml:"RequestID"`
}

func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	var r errorResponse
	r.RequestID = requestID
	r.Errors = append(r.Errors, struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}{e.Code, e.Message})
	body, err := xml.Marshal(r)
	if err != nil {
		http.Error(w, "ec2sim: encoding error response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("x-amzn-RequestId", requestID)
	w.WriteHeader(e.Status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
