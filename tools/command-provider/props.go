package main

// Property plumbing: the input "schemas" of the resources we serve, Check-time
// validation and defaults, and helpers that read plain Go values out of a
// resource.PropertyMap (which may carry secret wrappers and unknowns).

import (
	"fmt"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

type kind int

const (
	kString kind = iota
	kNumber
	kBool
	kStringMap
	kStringArray
	kAnyArray
	kObject
	kAssetOrArchive
	kLogging // enum: stdout | stderr | stdoutAndStderr | none
)

type field struct {
	name     string
	kind     kind
	required bool
	obj      []field // for kObject
	// def is applied by Check when the property is absent (as the real provider's
	// infer.Annotator SetDefault does).
	def *resource.PropertyValue
	// unsupported, when set, makes Check fail if the property is present.
	unsupported string
}

func defString(s string) *resource.PropertyValue {
	v := resource.NewStringProperty(s)
	return &v
}

func defNumber(n float64) *resource.PropertyValue {
	v := resource.NewNumberProperty(n)
	return &v
}

func defBool(b bool) *resource.PropertyValue {
	v := resource.NewBoolProperty(b)
	return &v
}

var loggingValues = []string{"stdout", "stderr", "stdoutAndStderr", "none"}

// proxyConnectionFields mirrors command:remote:ProxyConnection.
var proxyConnectionFields = []field{
	{name: "agentSocketPath", kind: kString},
	{name: "dialErrorLimit", kind: kNumber, def: defNumber(10)},
	{name: "host", kind: kString, required: true},
	{name: "hostKey", kind: kString},
	{name: "password", kind: kString},
	{name: "perDialTimeout", kind: kNumber, def: defNumber(15)},
	{name: "port", kind: kNumber, def: defNumber(22)},
	{name: "privateKey", kind: kString},
	{name: "privateKeyPassword", kind: kString},
	{name: "user", kind: kString, def: defString("root")},
}

// connectionFields mirrors command:remote:Connection.
var connectionFields = append(append([]field{}, proxyConnectionFields...),
	field{name: "proxy", kind: kObject, obj: proxyConnectionFields})

var triggersField = field{name: "triggers", kind: kAnyArray}

// remoteCommandFields are the inputs of command:remote:Command.
var remoteCommandFields = []field{
	{name: "addPreviousOutputInEnv", kind: kBool, def: defBool(true)},
	{name: "connection", kind: kObject, required: true, obj: connectionFields},
	{name: "create", kind: kString},
	{name: "delete", kind: kString},
	{name: "environment", kind: kStringMap},
	{name: "logging", kind: kLogging},
	{name: "stdin", kind: kString},
	triggersField,
	{name: "update", kind: kString},
}

const unsupportedAssets = "is not supported by this pulumi-resource-command build " +
	"(narwhal-fleet tools/command-provider implements stdout/stderr outputs only, no asset/archive collection)"

// localCommandFields are the inputs of command:local:Command.
var localCommandFields = []field{
	{name: "addPreviousOutputInEnv", kind: kBool, def: defBool(true)},
	{name: "archivePaths", kind: kStringArray, unsupported: unsupportedAssets},
	{name: "assetPaths", kind: kStringArray, unsupported: unsupportedAssets},
	{name: "create", kind: kString},
	{name: "delete", kind: kString},
	{name: "dir", kind: kString},
	{name: "environment", kind: kStringMap},
	{name: "interpreter", kind: kStringArray},
	{name: "logging", kind: kLogging},
	{name: "stdin", kind: kString},
	triggersField,
	{name: "update", kind: kString},
}

// localRunFields are the arguments of the command:local:run invoke.
var localRunFields = []field{
	{name: "addPreviousOutputInEnv", kind: kBool, def: defBool(true)},
	{name: "archivePaths", kind: kStringArray, unsupported: unsupportedAssets},
	{name: "assetPaths", kind: kStringArray, unsupported: unsupportedAssets},
	{name: "command", kind: kString, required: true},
	{name: "dir", kind: kString},
	{name: "environment", kind: kStringMap},
	{name: "interpreter", kind: kStringArray},
	{name: "logging", kind: kLogging},
	{name: "stdin", kind: kString},
}

// copyToRemoteFields are the inputs of command:remote:CopyToRemote.
var copyToRemoteFields = []field{
	{name: "connection", kind: kObject, required: true, obj: connectionFields},
	{name: "remotePath", kind: kString, required: true},
	{name: "source", kind: kAssetOrArchive, required: true},
	triggersField,
}

func inputKeys(fields []field) map[resource.PropertyKey]bool {
	keys := map[resource.PropertyKey]bool{}
	for _, f := range fields {
		keys[resource.PropertyKey(f.name)] = true
	}
	return keys
}

// unwrap strips secret wrappers and known output values from the top of v.
func unwrap(v resource.PropertyValue) resource.PropertyValue {
	for {
		switch {
		case v.IsSecret():
			v = v.SecretValue().Element
		case v.IsOutput() && v.OutputValue().Known:
			v = v.OutputValue().Element
		default:
			return v
		}
	}
}

// isUnknown reports whether v (after unwrapping) is not known yet.
func isUnknown(v resource.PropertyValue) bool {
	v = unwrap(v)
	return v.IsComputed() || (v.IsOutput() && !v.OutputValue().Known)
}

// stripSecrets returns v with every secret wrapper removed, recursively.
func stripSecrets(v resource.PropertyValue) resource.PropertyValue {
	v = unwrap(v)
	switch {
	case v.IsArray():
		arr := make([]resource.PropertyValue, len(v.ArrayValue()))
		for i, e := range v.ArrayValue() {
			arr[i] = stripSecrets(e)
		}
		return resource.NewArrayProperty(arr)
	case v.IsObject():
		return resource.NewObjectProperty(stripSecretsMap(v.ObjectValue()))
	}
	return v
}

func stripSecretsMap(m resource.PropertyMap) resource.PropertyMap {
	out := make(resource.PropertyMap, len(m))
	for k, v := range m {
		out[k] = stripSecrets(v)
	}
	return out
}

func kindName(k kind) string {
	switch k {
	case kString, kLogging:
		return "string"
	case kNumber:
		return "number"
	case kBool:
		return "boolean"
	case kStringMap:
		return "map of strings"
	case kStringArray:
		return "array of strings"
	case kAnyArray:
		return "array"
	case kObject:
		return "object"
	case kAssetOrArchive:
		return "asset or archive"
	}
	return "value"
}

// validate checks m against fields, the way the real provider's decoder does
// (unknown properties, missing required properties, wrong types). It never puts
// property values into the failure text: they may be secret.
func validate(prefix string, m resource.PropertyMap, fields []field) []*pulumirpc.CheckFailure {
	var failures []*pulumirpc.CheckFailure
	fail := func(prop, reason string) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: prop, Reason: reason})
	}
	known := map[string]field{}
	for _, f := range fields {
		known[f.name] = f
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			fail(prefix+k, fmt.Sprintf("Unrecognized field '%s'", k))
		}
	}
	for _, f := range fields {
		path := prefix + f.name
		raw, present := m[resource.PropertyKey(f.name)]
		if present && unwrap(raw).IsNull() {
			present = false
		}
		if !present {
			if f.required {
				fail(path, fmt.Sprintf("Missing required field '%s'", f.name))
			}
			continue
		}
		if f.unsupported != "" {
			fail(path, fmt.Sprintf("'%s' %s", f.name, f.unsupported))
			continue
		}
		if isUnknown(raw) {
			continue
		}
		v := unwrap(raw)
		typeErr := func() { fail(path, fmt.Sprintf("'%s' must be a %s", f.name, kindName(f.kind))) }
		switch f.kind {
		case kString:
			if !v.IsString() {
				typeErr()
			}
		case kLogging:
			if !v.IsString() {
				typeErr()
			} else if !contains(loggingValues, v.StringValue()) {
				fail(path, fmt.Sprintf("'%s' must be one of %v", f.name, loggingValues))
			}
		case kNumber:
			if !v.IsNumber() {
				typeErr()
			}
		case kBool:
			if !v.IsBool() {
				typeErr()
			}
		case kAnyArray:
			if !v.IsArray() {
				typeErr()
			}
		case kStringArray:
			if !v.IsArray() {
				typeErr()
				continue
			}
			for _, e := range v.ArrayValue() {
				if !isUnknown(e) && !unwrap(e).IsString() {
					typeErr()
					break
				}
			}
		case kStringMap:
			if !v.IsObject() {
				typeErr()
				continue
			}
			for _, e := range v.ObjectValue() {
				if !isUnknown(e) && !unwrap(e).IsString() {
					typeErr()
					break
				}
			}
		case kObject:
			if !v.IsObject() {
				typeErr()
				continue
			}
			failures = append(failures, validate(path+".", v.ObjectValue(), f.obj)...)
		case kAssetOrArchive:
			if !v.IsAsset() && !v.IsArchive() {
				typeErr()
			}
		}
	}
	return failures
}

// applyDefaults fills in absent properties that have defaults, descending into
// known objects (keeping their secretness).
func applyDefaults(m resource.PropertyMap, fields []field) {
	for _, f := range fields {
		key := resource.PropertyKey(f.name)
		raw, present := m[key]
		if present && unwrap(raw).IsNull() {
			present = false
		}
		if !present {
			if f.def != nil {
				m[key] = *f.def
			}
			continue
		}
		if f.kind != kObject || isUnknown(raw) {
			continue
		}
		inner := unwrap(raw)
		if !inner.IsObject() {
			continue
		}
		obj := inner.ObjectValue().Copy()
		applyDefaults(obj, f.obj)
		m[key] = rewrapLike(raw, resource.NewObjectProperty(obj))
	}
}

// rewrapLike wraps v in the same secret wrapper(s) that orig had.
func rewrapLike(orig, v resource.PropertyValue) resource.PropertyValue {
	if orig.IsSecret() {
		return resource.MakeSecret(rewrapLike(orig.SecretValue().Element, v))
	}
	if orig.IsOutput() && orig.OutputValue().Known {
		o := orig.OutputValue()
		o.Element = rewrapLike(o.Element, v)
		return resource.NewOutputProperty(o)
	}
	return v
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// ---- reading plain values ----

func getString(m resource.PropertyMap, key string) *string {
	v := unwrap(m[resource.PropertyKey(key)])
	if v.IsString() {
		s := v.StringValue()
		return &s
	}
	return nil
}

func getBool(m resource.PropertyMap, key string) *bool {
	v := unwrap(m[resource.PropertyKey(key)])
	if v.IsBool() {
		b := v.BoolValue()
		return &b
	}
	return nil
}

func getNumber(m resource.PropertyMap, key string) *float64 {
	v := unwrap(m[resource.PropertyKey(key)])
	if v.IsNumber() {
		n := v.NumberValue()
		return &n
	}
	return nil
}

func getStringMap(m resource.PropertyMap, key string) map[string]string {
	v := unwrap(m[resource.PropertyKey(key)])
	if !v.IsObject() {
		return nil
	}
	out := map[string]string{}
	for k, e := range v.ObjectValue() {
		e = unwrap(e)
		if e.IsString() {
			out[string(k)] = e.StringValue()
		}
	}
	return out
}

func getStringArray(m resource.PropertyMap, key string) []string {
	v := unwrap(m[resource.PropertyKey(key)])
	if !v.IsArray() {
		return nil
	}
	var out []string
	for _, e := range v.ArrayValue() {
		e = unwrap(e)
		if e.IsString() {
			out = append(out, e.StringValue())
		}
	}
	return out
}

func getObject(m resource.PropertyMap, key string) resource.PropertyMap {
	v := unwrap(m[resource.PropertyKey(key)])
	if v.IsObject() {
		return v.ObjectValue()
	}
	return nil
}

// isSecretProp reports whether the top-level property is (or contains) a secret.
func isSecretProp(m resource.PropertyMap, key string) bool {
	v, ok := m[resource.PropertyKey(key)]
	return ok && v.ContainsSecrets()
}
