// Builds an HTML form from a JSON schema and reads the answer back as JSON.
// Handles strings, numbers, integers, booleans, enums, nested objects, $ref/$defs and
// optional (anyOf with null) values; anything else gets a raw JSON textarea.
"use strict";

const SchemaForm = (() => {
  function el(tag, attrs = {}, children = []) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "text") node.textContent = value;
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function resolve(schema, root) {
    let seen = 0;
    while (schema && schema.$ref && seen++ < 20) {
      const name = schema.$ref.split("/").pop();
      const target = (root.$defs || root.definitions || {})[name];
      if (!target) break;
      schema = { ...target, ...schema, $ref: undefined, ...("default" in schema ? { default: schema.default } : {}) };
    }
    return schema || {};
  }

  // The non-null option of `anyOf: [X, {type: null}]`, marked optional.
  function unwrapOptional(schema, root) {
    const options = schema.anyOf || schema.oneOf;
    if (!Array.isArray(options)) return { schema, nullable: false };
    const real = options.filter((o) => o.type !== "null");
    if (real.length !== 1 || real.length === options.length) return { schema, nullable: false };
    const inner = resolve(real[0], root);
    return { schema: { ...inner, title: schema.title || inner.title, default: schema.default }, nullable: true };
  }

  function label(name, schema) {
    return schema.title || name || "answer";
  }

  // Each field is {element, read}: read() returns the value, or undefined when left empty.
  // Nothing is preselected unless the schema has a default: a person decides every
  // required value, and the form says which are required.
  function build(schema, root, name, required) {
    schema = resolve(schema, root);
    const optional = unwrapOptional(schema, root);
    schema = resolve(optional.schema, root);
    const nullable = optional.nullable || !required;
    const field = pick(schema, root, name, nullable);
    return { ...field, required: !nullable, name: label(name, schema) };
  }

  function pick(schema, root, name, nullable) {
    if (Array.isArray(schema.enum)) return enumField(schema, name, nullable);
    switch (schema.type) {
      case "boolean": return booleanField(schema, name, nullable);
      case "integer": case "number": return numberField(schema, name, nullable);
      case "string": return stringField(schema, name, nullable);
      case "object":
        if (schema.properties) return objectField(schema, root, name);
        return rawField(schema, name, nullable);
      default: return rawField(schema, name, nullable);
    }
  }

  function row(name, schema, control, { extra = "", required = false } = {}) {
    const hint = schema.description ? el("small", { class: "hint", text: schema.description }) : null;
    const title = el("span", { text: label(name, schema) }, [required ? el("em", { class: "req", text: " required" }) : null]);
    return el(extra === "choice" ? "div" : "label", { class: `field ${extra}` }, [title, control, hint]);
  }

  function hasDefault(schema) {
    return schema.default !== undefined && schema.default !== null;
  }

  function enumField(schema, name, nullable) {
    const select = el("select", { name, required: !nullable });
    if (nullable || !hasDefault(schema)) {
      select.append(el("option", { value: "", text: nullable ? "—" : "— choose —", selected: !hasDefault(schema) }));
    }
    schema.enum.forEach((value, i) => {
      select.append(el("option", { value: String(i), text: String(value), selected: value === schema.default }));
    });
    return {
      element: row(name, schema, select, { required: !nullable }),
      read: () => (select.value === "" ? undefined : schema.enum[Number(select.value)]),
    };
  }

  // With a default: a checkbox showing it. Without one: yes / no, neither picked.
  function booleanField(schema, name, nullable) {
    if (typeof schema.default === "boolean") {
      const box = el("input", { type: "checkbox", name, checked: schema.default === true });
      return { element: row(name, schema, box, { extra: "toggle" }), read: () => box.checked };
    }
    const group = `${name || "answer"}-${Math.random().toString(36).slice(2, 8)}`;
    const yes = el("input", { type: "radio", name, value: "yes", "data-group": group });
    const no = el("input", { type: "radio", name, value: "no", "data-group": group });
    for (const box of [yes, no]) box.addEventListener("change", () => { (box === yes ? no : yes).checked = false; });
    const choice = el("span", { class: "yes-no", role: "radiogroup" }, [
      el("label", {}, [yes, " yes"]), el("label", {}, [no, " no"]),
    ]);
    return {
      element: row(name, schema, choice, { extra: "choice", required: !nullable }),
      read: () => (yes.checked ? true : no.checked ? false : undefined),
    };
  }

  function numberField(schema, name, nullable) {
    const input = el("input", {
      type: "number", name, step: schema.type === "integer" ? "1" : "any",
      min: schema.minimum, max: schema.maximum, required: !nullable,
      value: typeof schema.default === "number" ? schema.default : undefined,
    });
    return {
      element: row(name, schema, input, { required: !nullable }),
      read: () => (input.value === "" ? undefined : Number(input.value)),
    };
  }

  function stringField(schema, name, nullable) {
    const input = el("input", {
      type: "text", name, required: !nullable, value: typeof schema.default === "string" ? schema.default : undefined,
    });
    return {
      element: row(name, schema, input, { required: !nullable }),
      // Left empty, a string without a text default is omitted (not sent as "").
      read: () => (input.value === "" && typeof schema.default !== "string" ? undefined : input.value),
    };
  }

  function objectField(schema, root, name) {
    const required = new Set(schema.required || []);
    const fields = Object.entries(schema.properties).map(([key, prop]) => [key, build(prop, root, key, required.has(key))]);
    const children = fields.map(([, field]) => field.element);
    const element = name
      ? el("fieldset", {}, [el("legend", { text: label(name, schema) }), ...children])
      : el("div", { class: "object" }, children);
    return {
      element,
      read: () => {
        const value = {};
        const missing = [];
        for (const [key, field] of fields) {
          const v = field.read();
          if (v !== undefined) value[key] = v;
          else if (field.required) missing.push(field.name);
        }
        if (missing.length) throw new Error(`fill in ${missing.join(", ")} (required)`);
        return value;
      },
    };
  }

  function rawField(schema, name, nullable) {
    const area = el("textarea", { name, placeholder: "JSON (or plain text)" });
    if (schema.default !== undefined) area.value = JSON.stringify(schema.default, null, 2);
    return {
      element: row(name, schema, area, { required: !nullable }),
      read: () => {
        const text = area.value.trim();
        if (text === "") return undefined;
        try { return JSON.parse(text); } catch { return area.value; }
      },
    };
  }

  // A form for `schema` (null: any answer). Returns {element, read}; read() throws on bad input.
  function create(schema) {
    const root = schema || {};
    const main = schema ? build(schema, root, "", true) : { ...rawField({}, "answer", true), required: false };
    const raw = el("textarea", { class: "raw-json", name: "raw-json" });
    const details = el("details", { class: "raw" }, [el("summary", { text: "Answer as raw JSON" }), raw]);
    details.addEventListener("toggle", () => {
      if (details.open && raw.value.trim() === "") {
        try { raw.value = JSON.stringify(main.read(), null, 2); } catch { /* leave it empty */ }
      }
    });
    const element = el("div", { class: "schema-form" }, [main.element, details]);
    return {
      element,
      read: () => {
        if (details.open) return JSON.parse(raw.value);
        const value = main.read();
        if (value === undefined && main.required) throw new Error("fill in the answer (required)");
        return value === undefined ? null : value;
      },
    };
  }

  return { create, el };
})();
