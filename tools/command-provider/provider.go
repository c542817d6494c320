package main

// The gRPC resource provider: Check / Diff / Create / Read / Update / Delete
// for command:remote:Command, command:local:Command and
// command:remote:CopyToRemote, plus the command:local:run invoke.
//
// Data-flow rules follow the real provider (pulumi-go-provider's infer layer):
//   - Check validates types, applies the schema defaults and marks connection
//     secret.
//   - Outputs repeat the inputs (keeping each input's secretness) and add
//     stdout/stderr, which are plain values (use additionalSecretOutputs to
//     make them secret). In preview, stdout/stderr are unknown on create, and
//     on update when any input changed or is unknown.
//   - Diff compares the new inputs with the old state's inputs; a change under
//     triggers is reported as a replacement.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	typeRemoteCommand = "command:remote:Command"
	typeLocalCommand  = "command:local:Command"
	typeCopyToRemote  = "command:remote:CopyToRemote"
	invokeLocalRun    = "command:local:run"
)

type commandProvider struct {
	pulumirpc.UnimplementedResourceProviderServer

	host    *provider.HostClient
	version string

	// cancelled by Cancel: aborts every running operation.
	cancelCtx context.Context
	cancelAll context.CancelFunc
}

func newProvider(host *provider.HostClient, version string) *commandProvider {
	ctx, cancel := context.WithCancel(context.Background())
	return &commandProvider{host: host, version: version, cancelCtx: ctx, cancelAll: cancel}
}

// opContext derives an operation context that ends with the request, on
// Cancel, or after the resource's custom timeout (seconds, 0 = none).
func (p *commandProvider) opContext(ctx context.Context, timeout float64) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.cancelCtx, cancel)
	cancelTimeout := func() {}
	if timeout > 0 {
		ctx, cancelTimeout = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second)))
	}
	return ctx, func() { cancelTimeout(); stop(); cancel() }
}

// engineLogger sends diagnostics for one resource to the engine.
type engineLogger struct {
	host *provider.HostClient
	urn  resource.URN
}

func (l engineLogger) log(sev diag.Severity, msg string, status bool) {
	if l.host == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if status {
		_ = l.host.LogStatus(ctx, sev, l.urn, msg)
	} else {
		_ = l.host.Log(ctx, sev, l.urn, msg)
	}
}

func (l engineLogger) Status(msg string)  { l.log(diag.Info, msg, true) }
func (l engineLogger) Warning(msg string) { l.log(diag.Warning, msg, false) }
func (l engineLogger) Error(msg string)   { l.log(diag.Error, msg, false) }

func (p *commandProvider) logger(urn string) logger {
	return engineLogger{host: p.host, urn: resource.URN(urn)}
}

// ---- (un)marshalling ----

func unmarshal(s *structpb.Struct, label string) (resource.PropertyMap, error) {
	if s == nil {
		return resource.PropertyMap{}, nil
	}
	return plugin.UnmarshalProperties(s, plugin.MarshalOptions{
		Label:              label,
		KeepUnknowns:       true,
		KeepSecrets:        true,
		SkipNulls:          true,
		ComputeAssetHashes: true,
	})
}

func marshal(m resource.PropertyMap, label string) (*structpb.Struct, error) {
	return plugin.MarshalProperties(m, plugin.MarshalOptions{
		Label:        label,
		KeepUnknowns: true,
		KeepSecrets:  true,
		SkipNulls:    true,
	})
}

func resourceType(urn, ty string) string {
	if ty != "" {
		return ty
	}
	u, err := resource.ParseURN(urn)
	if err != nil {
		return ""
	}
	return string(u.Type())
}

func resourceName(urn, name string) string {
	if name != "" {
		return name
	}
	u, err := resource.ParseURN(urn)
	if err != nil {
		return "resource"
	}
	return u.Name()
}

func fieldsFor(ty string) ([]field, error) {
	switch ty {
	case typeRemoteCommand:
		return remoteCommandFields, nil
	case typeLocalCommand:
		return localCommandFields, nil
	case typeCopyToRemote:
		return copyToRemoteFields, nil
	}
	return nil, status.Errorf(codes.Unimplemented,
		"resource type %q is not implemented by this pulumi-resource-command build "+
			"(narwhal-fleet tools/command-provider implements %s, %s and %s)",
		ty, typeRemoteCommand, typeLocalCommand, typeCopyToRemote)
}

func computedString() resource.PropertyValue {
	return resource.MakeComputed(resource.NewStringProperty(""))
}

// ---- plugin-level RPCs ----

func (p *commandProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: p.version}, nil
}

func (p *commandProvider) Handshake(context.Context, *pulumirpc.ProviderHandshakeRequest,
) (*pulumirpc.ProviderHandshakeResponse, error) {
	return &pulumirpc.ProviderHandshakeResponse{AcceptSecrets: true}, nil
}

func (p *commandProvider) GetSchema(_ context.Context, req *pulumirpc.GetSchemaRequest,
) (*pulumirpc.GetSchemaResponse, error) {
	if req.GetSubpackageName() != "" {
		return nil, status.Errorf(codes.NotFound, "no subpackage %q", req.GetSubpackageName())
	}
	return &pulumirpc.GetSchemaResponse{Schema: schemaJSON(p.version)}, nil
}

func (p *commandProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest,
) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *commandProvider) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (p *commandProvider) Configure(context.Context, *pulumirpc.ConfigureRequest,
) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true}, nil
}

func (p *commandProvider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	p.cancelAll()
	return &emptypb.Empty{}, nil
}

// ---- Check / Diff ----

func (p *commandProvider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	fields, err := fieldsFor(ty)
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), "Check.news")
	if err != nil {
		return nil, err
	}
	failures := validate("", news, fields)
	if ty == typeCopyToRemote {
		failures = append(failures, checkSource(news)...)
	}
	if len(failures) == 0 {
		applyDefaults(news, fields)
	}
	// connection carries credentials: it is always secret.
	if v, ok := news["connection"]; ok && !v.IsSecret() {
		news["connection"] = resource.MakeSecret(v)
	}
	inputs, err := marshal(news, "Check.inputs")
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CheckResponse{Inputs: inputs, Failures: failures}, nil
}

// diffInputs computes the diff between the old state's inputs and new inputs.
func diffInputs(olds, news resource.PropertyMap, fields []field, ignoreChanges []string) *pulumirpc.DiffResponse {
	keys := inputKeys(fields)
	oldInputs := resource.PropertyMap{}
	for k, v := range olds {
		if keys[k] {
			oldInputs[k] = stripSecrets(v)
		}
	}
	newInputs := resource.PropertyMap{}
	for k, v := range news {
		if keys[k] {
			newInputs[k] = stripSecrets(v)
		}
	}
	for _, ig := range ignoreChanges {
		k := resource.PropertyKey(ig)
		if !keys[k] {
			continue // only top-level keys are handled here; the engine applies nested paths itself
		}
		if v, ok := oldInputs[k]; ok {
			newInputs[k] = v
		} else {
			delete(newInputs, k)
		}
	}

	resp := &pulumirpc.DiffResponse{
		Changes:         pulumirpc.DiffResponse_DIFF_NONE,
		DetailedDiff:    map[string]*pulumirpc.PropertyDiff{},
		HasDetailedDiff: true,
	}
	objDiff := oldInputs.Diff(newInputs)
	if objDiff == nil || !objDiff.AnyChanges() {
		return resp
	}
	resp.Changes = pulumirpc.DiffResponse_DIFF_SOME

	changed := map[string]bool{}
	replaces := map[string]bool{}
	for path, d := range plugin.NewDetailedDiffFromObjectDiff(objDiff, false) {
		root := path
		if pp, err := resource.ParsePropertyPath(path); err == nil && len(pp) > 0 {
			if s, ok := pp[0].(string); ok {
				root = s
			}
		}
		changed[root] = true
		kind := d.Kind
		if root == "triggers" {
			kind = kind.AsReplace()
			replaces[root] = true
		}
		resp.DetailedDiff[path] = &pulumirpc.PropertyDiff{Kind: diffKind(kind), InputDiff: false}
	}
	resp.Diffs = sortedSet(changed)
	resp.Replaces = sortedSet(replaces)
	return resp
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diffKind(k plugin.DiffKind) pulumirpc.PropertyDiff_Kind {
	switch k {
	case plugin.DiffAdd:
		return pulumirpc.PropertyDiff_ADD
	case plugin.DiffAddReplace:
		return pulumirpc.PropertyDiff_ADD_REPLACE
	case plugin.DiffDelete:
		return pulumirpc.PropertyDiff_DELETE
	case plugin.DiffDeleteReplace:
		return pulumirpc.PropertyDiff_DELETE_REPLACE
	case plugin.DiffUpdateReplace:
		return pulumirpc.PropertyDiff_UPDATE_REPLACE
	default:
		return pulumirpc.PropertyDiff_UPDATE
	}
}

func (p *commandProvider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	fields, err := fieldsFor(ty)
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds(), "Diff.olds")
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), "Diff.news")
	if err != nil {
		return nil, err
	}
	return diffInputs(olds, news, fields, req.GetIgnoreChanges()), nil
}

// anyInputChanged mirrors the preview rule for update: outputs become unknown
// when an input is unknown or differs from its old value.
func anyInputChanged(olds, news resource.PropertyMap, fields []field) bool {
	for k := range inputKeys(fields) {
		nv, hasNew := news[k]
		if hasNew && isUnknown(nv) {
			return true
		}
		ov, hasOld := olds[k]
		if !hasOld {
			continue
		}
		if !hasNew || !stripSecrets(ov).DeepEquals(stripSecrets(nv)) {
			return true
		}
	}
	return false
}

// ---- command resources ----

type commandInputs struct {
	Create, Update, Delete *string
	Stdin, Logging, Dir    *string
	Environment            map[string]string
	AddPreviousOutputInEnv *bool
	Interpreter            []string
	Connection             *connection
	secret                 map[string]bool
}

func decodeCommand(ty string, m resource.PropertyMap) (*commandInputs, error) {
	in := &commandInputs{
		Create:                 getString(m, "create"),
		Update:                 getString(m, "update"),
		Delete:                 getString(m, "delete"),
		Stdin:                  getString(m, "stdin"),
		Logging:                getString(m, "logging"),
		Environment:            getStringMap(m, "environment"),
		AddPreviousOutputInEnv: getBool(m, "addPreviousOutputInEnv"),
		secret: map[string]bool{
			"create": isSecretProp(m, "create"),
			"update": isSecretProp(m, "update"),
			"delete": isSecretProp(m, "delete"),
		},
	}
	if ty == typeLocalCommand {
		in.Dir = getString(m, "dir")
		in.Interpreter = getStringArray(m, "interpreter")
		for _, k := range []string{"assetPaths", "archivePaths"} {
			if v, ok := m[resource.PropertyKey(k)]; ok && !unwrap(v).IsNull() {
				return nil, fmt.Errorf("'%s' %s", k, unsupportedAssets)
			}
		}
		return in, nil
	}
	conn, err := decodeConnection(getObject(m, "connection"))
	if err != nil {
		return nil, err
	}
	in.Connection = conn
	return in, nil
}

// run executes one of the command's scripts (create/update/delete).
func (p *commandProvider) run(ctx context.Context, ty string, in *commandInputs, which, command string,
	prevStdout, prevStderr string, lg logger,
) (runResult, error) {
	spec := runSpec{
		Command:                command,
		CommandSecret:          in.secret[which],
		Environment:            in.Environment,
		Stdin:                  in.Stdin,
		Logging:                in.Logging,
		AddPreviousOutputInEnv: in.AddPreviousOutputInEnv,
		PrevStdout:             prevStdout,
		PrevStderr:             prevStderr,
		Dir:                    in.Dir,
		Interpreter:            in.Interpreter,
	}
	if ty == typeLocalCommand {
		return runLocal(ctx, spec, lg)
	}
	return runRemote(ctx, in.Connection, spec, lg)
}

func plainString(v resource.PropertyValue) string {
	v = unwrap(v)
	if v.IsString() {
		return v.StringValue()
	}
	return ""
}

func (p *commandProvider) Create(ctx context.Context, req *pulumirpc.CreateRequest,
) (*pulumirpc.CreateResponse, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	if _, err := fieldsFor(ty); err != nil {
		return nil, err
	}
	props, err := unmarshal(req.GetProperties(), "Create.properties")
	if err != nil {
		return nil, err
	}
	ctx, done := p.opContext(ctx, req.GetTimeout())
	defer done()
	lg := p.logger(req.GetUrn())
	outs := props.Copy()

	var id string
	switch ty {
	case typeCopyToRemote:
		if !req.GetPreview() {
			conn, err := decodeConnection(getObject(props, "connection"))
			if err != nil {
				return nil, err
			}
			src, _, err := sourcePathAndHash(props)
			if err != nil {
				return nil, err
			}
			remotePath := getString(props, "remotePath")
			if remotePath == nil {
				return nil, errors.New("remotePath is required")
			}
			if err := copyToRemote(ctx, conn, src, *remotePath, lg); err != nil {
				return nil, err
			}
			if id, err = resource.NewUniqueHex("", 8, 0); err != nil {
				return nil, err
			}
		}
	default:
		if id, err = resource.NewUniqueHex(resourceName(req.GetUrn(), req.GetName()), 8, 0); err != nil {
			return nil, err
		}
		if req.GetPreview() {
			outs["stdout"] = computedString()
			outs["stderr"] = computedString()
			break
		}
		in, err := decodeCommand(ty, props)
		if err != nil {
			return nil, err
		}
		var res runResult
		if in.Create != nil {
			if res, err = p.run(ctx, ty, in, "create", *in.Create, "", "", lg); err != nil {
				return nil, err
			}
		}
		outs["stdout"] = resource.NewStringProperty(res.Stdout)
		outs["stderr"] = resource.NewStringProperty(res.Stderr)
	}

	properties, err := marshal(outs, "Create.outputs")
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: properties}, nil
}

func (p *commandProvider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	if _, err := fieldsFor(ty); err != nil {
		return nil, err
	}
	// The state is the truth: nothing is fetched from the host.
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (p *commandProvider) Update(ctx context.Context, req *pulumirpc.UpdateRequest,
) (*pulumirpc.UpdateResponse, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	fields, err := fieldsFor(ty)
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds(), "Update.olds")
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), "Update.news")
	if err != nil {
		return nil, err
	}
	for _, ig := range req.GetIgnoreChanges() {
		k := resource.PropertyKey(ig)
		if v, ok := olds[k]; ok && inputKeys(fields)[k] {
			news[k] = v
		}
	}
	ctx, done := p.opContext(ctx, req.GetTimeout())
	defer done()
	lg := p.logger(req.GetUrn())
	outs := news.Copy()

	switch ty {
	case typeCopyToRemote:
		if req.GetPreview() {
			break
		}
		src, newHash, err := sourcePathAndHash(news)
		if err != nil {
			return nil, err
		}
		_, oldHash, _ := sourcePathAndHash(olds)
		newPath, oldPath := getString(news, "remotePath"), getString(olds, "remotePath")
		if newPath == nil {
			return nil, errors.New("remotePath is required")
		}
		if newHash != oldHash || oldPath == nil || *newPath != *oldPath {
			conn, err := decodeConnection(getObject(news, "connection"))
			if err != nil {
				return nil, err
			}
			if err := copyToRemote(ctx, conn, src, *newPath, lg); err != nil {
				return nil, err
			}
		}
	default:
		oldStdout, oldStderr := plainString(olds["stdout"]), plainString(olds["stderr"])
		outs["stdout"] = resource.NewStringProperty(oldStdout)
		outs["stderr"] = resource.NewStringProperty(oldStderr)
		if req.GetPreview() {
			if anyInputChanged(olds, news, fields) {
				outs["stdout"] = computedString()
				outs["stderr"] = computedString()
			}
			break
		}
		in, err := decodeCommand(ty, news)
		if err != nil {
			return nil, err
		}
		which, cmd := "update", in.Update
		if cmd == nil {
			which, cmd = "create", in.Create
		}
		if cmd != nil {
			res, err := p.run(ctx, ty, in, which, *cmd, oldStdout, oldStderr, lg)
			if err != nil {
				return nil, err
			}
			outs["stdout"] = resource.NewStringProperty(res.Stdout)
			outs["stderr"] = resource.NewStringProperty(res.Stderr)
		}
	}

	properties, err := marshal(outs, "Update.outputs")
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: properties}, nil
}

func (p *commandProvider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	ty := resourceType(req.GetUrn(), req.GetType())
	if _, err := fieldsFor(ty); err != nil {
		return nil, err
	}
	if ty == typeCopyToRemote {
		// Like the real provider, deleting a CopyToRemote leaves the copied files.
		return &emptypb.Empty{}, nil
	}
	props, err := unmarshal(req.GetProperties(), "Delete.properties")
	if err != nil {
		return nil, err
	}
	in, err := decodeCommand(ty, props)
	if err != nil {
		return nil, err
	}
	if in.Delete == nil {
		return &emptypb.Empty{}, nil
	}
	ctx, done := p.opContext(ctx, req.GetTimeout())
	defer done()
	_, err = p.run(ctx, ty, in, "delete", *in.Delete,
		plainString(props["stdout"]), plainString(props["stderr"]), p.logger(req.GetUrn()))
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// ---- invokes ----

func (p *commandProvider) Invoke(ctx context.Context, req *pulumirpc.InvokeRequest,
) (*pulumirpc.InvokeResponse, error) {
	if req.GetTok() != invokeLocalRun {
		return nil, status.Errorf(codes.Unimplemented,
			"function %q is not implemented by this pulumi-resource-command build (only %s is)",
			req.GetTok(), invokeLocalRun)
	}
	args, err := unmarshal(req.GetArgs(), "Invoke.args")
	if err != nil {
		return nil, err
	}
	if failures := validate("", args, localRunFields); len(failures) > 0 {
		return &pulumirpc.InvokeResponse{Failures: failures}, nil
	}
	applyDefaults(args, localRunFields)
	command := getString(args, "command")
	if command == nil {
		return nil, errors.New("command is required")
	}
	ctx, done := p.opContext(ctx, 0)
	defer done()
	res, err := runLocal(ctx, runSpec{
		Command:                *command,
		CommandSecret:          isSecretProp(args, "command"),
		Environment:            getStringMap(args, "environment"),
		Stdin:                  getString(args, "stdin"),
		Logging:                getString(args, "logging"),
		AddPreviousOutputInEnv: getBool(args, "addPreviousOutputInEnv"),
		Dir:                    getString(args, "dir"),
		Interpreter:            getStringArray(args, "interpreter"),
	}, nopLogger{})
	if err != nil {
		return nil, err
	}
	outs := args.Copy()
	outs["stdout"] = resource.NewStringProperty(res.Stdout)
	outs["stderr"] = resource.NewStringProperty(res.Stderr)
	ret, err := marshal(outs, "Invoke.return")
	if err != nil {
		return nil, err
	}
	return &pulumirpc.InvokeResponse{Return: ret}, nil
}
